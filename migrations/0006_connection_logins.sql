-- Logins of user-dependent service users and the scopes of every connection (docs/report-export-service.md "User-dependent
-- service user"). One row per connection
-- as the server knows it: the jobs.yaml name, the server (base_url) and the Client-ID. The refresh token is stored
-- only sealed with AES-256-GCM (key REPORT_ETL_SECRET_KEY, never in the database); key_id tells which key sealed it.
CREATE TABLE etl.connection_logins (
  connection            text        NOT NULL,
  base_url              text        NOT NULL,
  client_id             text        NOT NULL,
  auth                  text        NOT NULL CHECK (auth IN ('client_credentials', 'authorization_code')),
  -- One id per successful login; a new login replaces the refresh token and gets a new id.
  login_id              uuid,
  refresh_token_sealed  text,
  key_id                text,
  logged_in_at          timestamptz,
  requested_scopes      text[],
  -- The scope of the last token response (space-separated, spec "Token response"), both kinds of service user.
  granted_scope         text,
  scope_seen_at         timestamptz,
  -- Set when a refresh was refused: runs fail at once with LOGIN_REQUIRED until the next login clears it.
  login_required_at     timestamptz,
  login_required_reason text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection, base_url, client_id)
);

-- Pending logins: the OAuth `state` of each authorization request (RFC 6749 section 10.12), single use, expiring.
-- Only a SHA-256 of the state is kept. outcome/message/login_id tell a waiting `report-etl login` how it ended.
CREATE TABLE etl.login_states (
  state_hash   text        PRIMARY KEY,
  connection   text        NOT NULL,
  base_url     text        NOT NULL,
  client_id    text        NOT NULL,
  redirect_uri text        NOT NULL,
  scopes       text[]      NOT NULL,
  started_by   text        NOT NULL CHECK (started_by IN ('cli', 'admin')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz,
  outcome      text        CHECK (outcome IN ('logged_in', 'failed')),
  message      text
);
CREATE INDEX login_states_expires_idx ON etl.login_states (expires_at);
