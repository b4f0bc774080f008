package io.dsbra.placement;

/** A heat document that cannot be used; the message says why, in one line. */
public class MalformedHeatException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public MalformedHeatException(String message) {
    super(message);
  }
}
