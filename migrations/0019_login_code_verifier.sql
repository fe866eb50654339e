-- PKCE (RFC 7636, S256) for the login of a user-dependent service user: the code verifier of a pending login, sealed
-- with AES-256-GCM under a key derived from the login's state. The state itself is never stored (only its SHA-256),
-- so the column opens for the redirect that brings the state back and for nobody who reads the table. NULL for a
-- login started without PKCE (`pkce: false`, or a server whose discovery document offers no S256) and for logins
-- started before this migration.
ALTER TABLE etl.login_states ADD COLUMN code_verifier_sealed text;
