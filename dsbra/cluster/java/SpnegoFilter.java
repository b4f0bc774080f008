package dsbra.spark;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.security.Principal;
import java.security.PrivilegedActionException;
import java.security.PrivilegedExceptionAction;
import java.util.Base64;
import java.util.Map;

import javax.security.auth.Subject;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;
import javax.security.auth.login.LoginContext;
import javax.security.auth.login.LoginException;

import org.ietf.jgss.GSSContext;
import org.ietf.jgss.GSSCredential;
import org.ietf.jgss.GSSException;
import org.ietf.jgss.GSSManager;
import org.ietf.jgss.Oid;

/**
 * SPNEGO (HTTP Negotiate) on the Spark History Server, as Hadoop's AuthenticationFilter puts it
 * on every Hadoop web server. Spark 4's UI is Jakarta Servlet (Jetty 11) and Hadoop's filter is
 * javax.servlet, so Spark cannot load it (SPARK-47118); this is the same handshake on the JDK's
 * own GSS-API. Set with spark.ui.filters=dsbra.spark.SpnegoFilter and the init parameters
 * principal (HTTP/host@REALM) and keytab. A request without a valid Negotiate token gets 401 and
 * "WWW-Authenticate: Negotiate"; an accepted one reaches Spark as the client's short name.
 */
public final class SpnegoFilter implements Filter {
    private static final Oid SPNEGO = oid("1.3.6.1.5.5.2");
    private static final Oid KRB5 = oid("1.2.840.113554.1.2.2");
    private Subject service;

    @Override
    public void init(FilterConfig config) throws ServletException {
        String principal = config.getInitParameter("principal");
        String keytab = config.getInitParameter("keytab");
        if (principal == null || keytab == null) {
            throw new ServletException("SpnegoFilter needs the init parameters principal and keytab");
        }
        Configuration login = new Configuration() {
            @Override
            public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
                return new AppConfigurationEntry[] {new AppConfigurationEntry(
                    "com.sun.security.auth.module.Krb5LoginModule",
                    AppConfigurationEntry.LoginModuleControlFlag.REQUIRED,
                    Map.of("useKeyTab", "true", "keyTab", keytab, "principal", principal, "storeKey", "true",
                           "doNotPrompt", "true", "isInitiator", "false"))};
            }
        };
        try {
            LoginContext context = new LoginContext("spnego", new Subject(), null, login);
            context.login();
            service = context.getSubject();
        } catch (LoginException e) {
            throw new ServletException("SpnegoFilter cannot log in as " + principal + " from " + keytab, e);
        }
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        HttpServletRequest request = (HttpServletRequest) req;
        HttpServletResponse response = (HttpServletResponse) res;
        String header = request.getHeader("Authorization");
        if (header == null || !header.regionMatches(true, 0, "Negotiate ", 0, 10)) {
            refuse(response, null);
            return;
        }
        byte[] token;
        try {
            token = Base64.getDecoder().decode(header.substring(10).trim());
        } catch (IllegalArgumentException e) {
            refuse(response, null);
            return;
        }
        String[] user = new String[1];
        byte[] reply;
        try {
            reply = Subject.doAs(service, (PrivilegedExceptionAction<byte[]>) () -> {
                GSSManager manager = GSSManager.getInstance();
                GSSCredential credential = manager.createCredential(
                    null, GSSCredential.INDEFINITE_LIFETIME, new Oid[] {SPNEGO, KRB5}, GSSCredential.ACCEPT_ONLY);
                GSSContext context = manager.createContext(credential);
                try {
                    byte[] out = context.acceptSecContext(token, 0, token.length);
                    if (context.isEstablished()) {
                        user[0] = context.getSrcName().toString();
                    }
                    return out;
                } finally {
                    context.dispose();
                }
            });
        } catch (PrivilegedActionException e) {
            refuse(response, null);
            return;
        }
        if (user[0] == null) {  // one round trip is all Kerberos needs; anything else is refused
            refuse(response, reply);
            return;
        }
        if (reply != null) {
            response.setHeader("WWW-Authenticate", "Negotiate " + Base64.getEncoder().encodeToString(reply));
        }
        String name = shortName(user[0]);
        chain.doFilter(new HttpServletRequestWrapper(request) {
            @Override
            public String getRemoteUser() {
                return name;
            }

            @Override
            public Principal getUserPrincipal() {
                return () -> name;
            }

            @Override
            public String getAuthType() {
                return "Negotiate";
            }
        }, response);
    }

    @Override
    public void destroy() {
    }

    private static void refuse(HttpServletResponse response, byte[] reply) throws IOException {
        response.setHeader("WWW-Authenticate",
                           reply == null ? "Negotiate" : "Negotiate " + Base64.getEncoder().encodeToString(reply));
        response.sendError(HttpServletResponse.SC_UNAUTHORIZED, "SPNEGO (Kerberos) authentication required");
    }

    /** user/host@REALM -> user, as Hadoop's default auth_to_local rule gives it. */
    private static String shortName(String principal) {
        int cut = principal.length();
        for (char c : new char[] {'/', '@'}) {
            int at = principal.indexOf(c);
            if (at >= 0 && at < cut) {
                cut = at;
            }
        }
        return principal.substring(0, cut);
    }

    private static Oid oid(String dotted) {
        try {
            return new Oid(dotted);
        } catch (GSSException e) {
            throw new IllegalStateException(e);
        }
    }
}
