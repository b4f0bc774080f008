"""`dsbra report`: result sets, real or simulated, read as arms of runs (runs), and the report
the DSBRA paper's figures and claims make of them (paper)."""
