-- The SQLite schema at the newest revision, generated from tunnelgw.models by
-- `python -m tunnelgw.migrations.schema`: do not edit (tunnelgw/migrations/schema.py).

CREATE TABLE account (
	id VARCHAR(64) NOT NULL,
	name VARCHAR NOT NULL,
	created_at DATETIME NOT NULL,
	clock_offset_seconds BIGINT DEFAULT '0' NOT NULL,
	api_restriction INTEGER DEFAULT '0' NOT NULL,
	fault_rules BOOLEAN DEFAULT 0 NOT NULL,
	event_routes TEXT,
	PRIMARY KEY (id)
);

CREATE TABLE issuing_authority (
	name VARCHAR(64) NOT NULL,
	certificate_pem TEXT NOT NULL,
	wrapped_private_key BLOB NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (name)
);

CREATE TABLE abuse_report (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	urls JSON NOT NULL,
	metadata TEXT NOT NULL,
	hostnames JSON NOT NULL,
	step_seconds INTEGER NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_abuse_report_account_id_id ON abuse_report (account_id, id);

CREATE TABLE agent_ingress (
	cert_authority VARCHAR(64),
	cert_private_key_type VARCHAR(8),
	renews_at DATETIME,
	job_started_at DATETIME,
	job_msg TEXT,
	job_error_code VARCHAR(32),
	job_retries_at DATETIME,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	domain VARCHAR(253) NOT NULL,
	ns_targets JSON NOT NULL,
	region_domains JSON NOT NULL,
	certificate_id VARCHAR(64),
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_agent_ingress_account_id_id ON agent_ingress (account_id, id);

CREATE UNIQUE INDEX ux_agent_ingress_domain ON agent_ingress (domain);

CREATE TABLE application_session (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	public_url TEXT NOT NULL,
	browser_session JSON NOT NULL,
	application_user_id VARCHAR(64) NOT NULL,
	endpoint_id VARCHAR(64) NOT NULL,
	edge_id VARCHAR(64),
	route_id VARCHAR(64),
	last_active DATETIME NOT NULL,
	expires_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_application_session_account_id_id ON application_session (account_id, id);

CREATE INDEX ix_application_session_application_user_id ON application_session (application_user_id);

CREATE TABLE application_user (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	identity_provider_name TEXT NOT NULL,
	identity_provider_url TEXT NOT NULL,
	provider_user_id TEXT NOT NULL,
	username TEXT NOT NULL,
	email TEXT NOT NULL,
	name TEXT NOT NULL,
	last_active DATETIME NOT NULL,
	last_login DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_application_user_account_id_id ON application_user (account_id, id);

CREATE TABLE certificate_authority (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	ca_pem TEXT NOT NULL,
	subject_common_name TEXT NOT NULL,
	not_before DATETIME NOT NULL,
	not_after DATETIME NOT NULL,
	key_usages JSON NOT NULL,
	extended_key_usages JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_certificate_authority_account_id_id ON certificate_authority (account_id, id);

CREATE TABLE edge (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	kind VARCHAR(8) NOT NULL,
	hostports JSON NOT NULL,
	backend_id VARCHAR(64),
	backend_enabled BOOLEAN,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_edge_account_id_id ON edge (account_id, id);

CREATE INDEX ix_edge_backend_id ON edge (backend_id);

CREATE TABLE edge_route (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	edge_id VARCHAR(64) NOT NULL,
	match_type VARCHAR(16) NOT NULL,
	"match" TEXT NOT NULL,
	backend_id VARCHAR(64),
	backend_enabled BOOLEAN,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_edge_route_account_id_id ON edge_route (account_id, id);

CREATE INDEX ix_edge_route_backend_id ON edge_route (backend_id);

CREATE INDEX ix_edge_route_edge_id ON edge_route (edge_id);

CREATE TABLE endpoint (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	region VARCHAR(8) NOT NULL,
	proto VARCHAR(8) NOT NULL,
	hostport TEXT NOT NULL,
	public_url TEXT NOT NULL,
	type VARCHAR(16) NOT NULL,
	reserved_domain_id VARCHAR(64),
	reserved_addr_id VARCHAR(64),
	tunnel_id VARCHAR(64),
	edge_id VARCHAR(64),
	metadata TEXT NOT NULL,
	name TEXT DEFAULT '' NOT NULL,
	description TEXT DEFAULT '' NOT NULL,
	upstream_url TEXT DEFAULT '' NOT NULL,
	upstream_protocol VARCHAR(16) DEFAULT '' NOT NULL,
	traffic_policy TEXT DEFAULT '' NOT NULL,
	bindings JSON DEFAULT '["public"]' NOT NULL,
	pooling_enabled BOOLEAN DEFAULT 0 NOT NULL,
	principal_id VARCHAR(64),
	tunnel_session_id VARCHAR(64),
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_endpoint_account_id_id ON endpoint (account_id, id);

CREATE INDEX ix_endpoint_tunnel_session_id ON endpoint (tunnel_session_id);

CREATE TABLE endpoint_configuration (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	type VARCHAR(8) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_endpoint_configuration_account_id_id ON endpoint_configuration (account_id, id);

CREATE TABLE event_destination (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	format VARCHAR(16) NOT NULL,
	target JSON NOT NULL,
	sealed_credential BLOB,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_event_destination_account_id_id ON event_destination (account_id, id);

CREATE TABLE event_record (
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	seq INTEGER NOT NULL,
	id VARCHAR(64) NOT NULL,
	event_type VARCHAR(128) NOT NULL,
	event JSON NOT NULL,
	deliveries JSON,
	delivery_count INTEGER NOT NULL,
	route VARCHAR(32),
	PRIMARY KEY (seq),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_event_record_account_id_id ON event_record (account_id, id, delivery_count);

CREATE TABLE event_route (
	account_id VARCHAR(64) NOT NULL,
	digest VARCHAR(32) NOT NULL,
	deliveries JSON NOT NULL,
	retired_at DATETIME,
	PRIMARY KEY (account_id, digest),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE TABLE event_subscription (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_event_subscription_account_id_id ON event_subscription (account_id, id);

CREATE TABLE fault_rule (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	operation VARCHAR(128) NOT NULL,
	destination_id VARCHAR(64),
	status INTEGER,
	latency_ms INTEGER NOT NULL,
	probability FLOAT NOT NULL,
	remaining INTEGER,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_fault_rule_account_operation ON fault_rule (account_id, operation);

CREATE TABLE fixture_load (
	account_id VARCHAR(64) NOT NULL,
	digest VARCHAR(64) NOT NULL,
	loaded_at DATETIME NOT NULL,
	PRIMARY KEY (account_id, digest),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE TABLE http_response_backend (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	body TEXT NOT NULL,
	headers JSON,
	status_code INTEGER NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_http_response_backend_account_id_id ON http_response_backend (account_id, id);

CREATE TABLE ip_policy (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ip_policy_account_id_id ON ip_policy (account_id, id);

CREATE TABLE ip_restriction (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	type VARCHAR(16) NOT NULL,
	enforced BOOLEAN NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ip_restriction_account_id_id ON ip_restriction (account_id, id);

CREATE TABLE kubernetes_operator (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	principal_id VARCHAR(64) NOT NULL,
	enabled_features JSON NOT NULL,
	region VARCHAR(16) NOT NULL,
	deployment_name TEXT NOT NULL,
	deployment_namespace TEXT NOT NULL,
	deployment_version TEXT NOT NULL,
	deployment_cluster_name TEXT NOT NULL,
	endpoint_selectors JSON,
	ingress_endpoint TEXT,
	binding_csr TEXT,
	cert_pem TEXT,
	cert_not_before DATETIME,
	cert_not_after DATETIME,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_kubernetes_operator_account_id_id ON kubernetes_operator (account_id, id);

CREATE TABLE principal (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	kind VARCHAR NOT NULL,
	name VARCHAR NOT NULL,
	is_admin BOOLEAN NOT NULL,
	active BOOLEAN DEFAULT 1 NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_principal_account_id_id ON principal (account_id, id);

CREATE TABLE quota_usage (
	account_id VARCHAR(64) NOT NULL,
	kind VARCHAR(64) NOT NULL,
	bound INTEGER NOT NULL,
	PRIMARY KEY (account_id, kind),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE TABLE request_journal (
	seq INTEGER NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	at DATETIME NOT NULL,
	request_id VARCHAR(64) NOT NULL,
	method VARCHAR(8) NOT NULL,
	path TEXT NOT NULL,
	"query" TEXT NOT NULL,
	operation VARCHAR(128) NOT NULL,
	status INTEGER NOT NULL,
	error_code VARCHAR(64),
	principal_id VARCHAR(64) NOT NULL,
	api_key_id VARCHAR(64),
	access_token_id VARCHAR(64),
	scope VARCHAR(64),
	duration_ms FLOAT NOT NULL,
	body_bytes INTEGER NOT NULL,
	body JSON,
	PRIMARY KEY (seq),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_request_journal_account_id_seq ON request_journal (account_id, seq);

CREATE TABLE reserved_addr (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	host VARCHAR(253) NOT NULL,
	port INTEGER NOT NULL,
	region VARCHAR(8) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_reserved_addr_account_id_id ON reserved_addr (account_id, id);

CREATE UNIQUE INDEX ux_reserved_addr_host_port ON reserved_addr (host, port);

CREATE TABLE reserved_domain (
	cert_authority VARCHAR(64),
	cert_private_key_type VARCHAR(8),
	renews_at DATETIME,
	job_started_at DATETIME,
	job_msg TEXT,
	job_error_code VARCHAR(32),
	job_retries_at DATETIME,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	domain VARCHAR(253) NOT NULL,
	region VARCHAR(8) NOT NULL,
	cname_target TEXT,
	acme_challenge_cname_target TEXT,
	http_endpoint_configuration_id VARCHAR(64),
	https_endpoint_configuration_id VARCHAR(64),
	certificate_id VARCHAR(64),
	resolves_to JSON DEFAULT '[]' NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_reserved_domain_account_id_id ON reserved_domain (account_id, id);

CREATE INDEX ix_reserved_domain_certificate_id ON reserved_domain (certificate_id);

CREATE UNIQUE INDEX ux_reserved_domain_domain ON reserved_domain (domain);

CREATE TABLE ssh_certificate_authority (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	public_key TEXT NOT NULL,
	key_type VARCHAR(16) NOT NULL,
	wrapped_private_key BLOB NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ssh_certificate_authority_account_id_id ON ssh_certificate_authority (account_id, id);

CREATE TABLE ssh_host_certificate (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	ssh_certificate_authority_id VARCHAR(64) NOT NULL,
	public_key TEXT NOT NULL,
	key_type VARCHAR(16) NOT NULL,
	principals JSON NOT NULL,
	valid_after DATETIME NOT NULL,
	valid_until DATETIME NOT NULL,
	certificate TEXT NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ssh_host_certificate_account_id_id ON ssh_host_certificate (account_id, id);

CREATE INDEX ix_ssh_host_certificate_ca_valid_until ON ssh_host_certificate (ssh_certificate_authority_id, valid_until);

CREATE TABLE ssh_user_certificate (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	ssh_certificate_authority_id VARCHAR(64) NOT NULL,
	public_key TEXT NOT NULL,
	key_type VARCHAR(16) NOT NULL,
	principals JSON NOT NULL,
	critical_options JSON NOT NULL,
	extensions JSON NOT NULL,
	valid_after DATETIME NOT NULL,
	valid_until DATETIME NOT NULL,
	certificate TEXT NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ssh_user_certificate_account_id_id ON ssh_user_certificate (account_id, id);

CREATE INDEX ix_ssh_user_certificate_ca_valid_until ON ssh_user_certificate (ssh_certificate_authority_id, valid_until);

CREATE TABLE tls_certificate (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	certificate_pem TEXT NOT NULL,
	wrapped_private_key BLOB,
	issued_for_id VARCHAR(64),
	issued_at DATETIME,
	not_before DATETIME NOT NULL,
	not_after DATETIME NOT NULL,
	subject_common_name TEXT NOT NULL,
	subject_alternative_names JSON NOT NULL,
	key_usages JSON NOT NULL,
	extended_key_usages JSON NOT NULL,
	private_key_type VARCHAR(16) NOT NULL,
	issuer_common_name TEXT NOT NULL,
	serial_number TEXT NOT NULL,
	subject_organization TEXT NOT NULL,
	subject_organizational_unit TEXT NOT NULL,
	subject_locality TEXT NOT NULL,
	subject_province TEXT NOT NULL,
	subject_country TEXT NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_tls_certificate_account_id_id ON tls_certificate (account_id, id);

CREATE TABLE tunnel (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	public_url TEXT NOT NULL,
	started_at DATETIME NOT NULL,
	proto VARCHAR(8) NOT NULL,
	region VARCHAR(8) NOT NULL,
	labels JSON NOT NULL,
	forwards_to TEXT NOT NULL,
	endpoint_id VARCHAR(64),
	tunnel_session_id VARCHAR(64),
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_tunnel_account_id_id ON tunnel (account_id, id);

CREATE INDEX ix_tunnel_tunnel_session_id ON tunnel (tunnel_session_id);

CREATE TABLE tunnel_group_backend (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	labels JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_tunnel_group_backend_account_id_id ON tunnel_group_backend (account_id, id);

CREATE TABLE tunnel_session (
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	started_at DATETIME NOT NULL,
	agent_version VARCHAR(32) NOT NULL,
	os VARCHAR(32) NOT NULL,
	region VARCHAR(8) NOT NULL,
	ip VARCHAR(64) NOT NULL,
	transport VARCHAR(16) NOT NULL,
	metadata TEXT NOT NULL,
	credential_id VARCHAR(64) NOT NULL,
	updated_to VARCHAR(32) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_tunnel_session_account_id_id ON tunnel_session (account_id, id);

CREATE TABLE vault (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	name VARCHAR(64) NOT NULL,
	updated_at DATETIME NOT NULL,
	created_by VARCHAR(64) NOT NULL,
	last_updated_by VARCHAR(64) NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT uq_vault_account_id_name UNIQUE (account_id, name),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_vault_account_id_id ON vault (account_id, id);

CREATE TABLE access_token (
	owner_id VARCHAR(64) NOT NULL,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	token_hash VARCHAR(64) NOT NULL,
	scopes JSON NOT NULL,
	expires_at DATETIME,
	revoked_at DATETIME,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES principal (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	UNIQUE (token_hash)
);

CREATE INDEX ix_access_token_account_id_id ON access_token (account_id, id);

CREATE INDEX ix_access_token_owner_id ON access_token (owner_id);

CREATE TABLE ai_gateway_api_key (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	token_hash VARCHAR(64) NOT NULL,
	display_name VARCHAR(32) NOT NULL,
	endpoint_id VARCHAR(64),
	updated_at DATETIME NOT NULL,
	created_by VARCHAR(64) NOT NULL,
	last_updated_by VARCHAR(64) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	UNIQUE (token_hash),
	FOREIGN KEY(endpoint_id) REFERENCES endpoint (id) ON DELETE SET NULL
);

CREATE INDEX ix_ai_gateway_api_key_account_id_id ON ai_gateway_api_key (account_id, id);

CREATE INDEX ix_ai_gateway_api_key_endpoint_id ON ai_gateway_api_key (endpoint_id);

CREATE TABLE api_key (
	owner_id VARCHAR(64) NOT NULL,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	token_hash VARCHAR(64) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES principal (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	UNIQUE (token_hash)
);

CREATE INDEX ix_api_key_account_id_id ON api_key (account_id, id);

CREATE INDEX ix_api_key_owner_id ON api_key (owner_id);

CREATE TABLE credential (
	owner_id VARCHAR(64) NOT NULL,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	token_hash VARCHAR(64) NOT NULL,
	acl JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES principal (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	UNIQUE (token_hash)
);

CREATE INDEX ix_credential_account_id_id ON credential (account_id, id);

CREATE INDEX ix_credential_owner_id ON credential (owner_id);

CREATE TABLE event_source (
	subscription_id VARCHAR(64) NOT NULL,
	type VARCHAR(128) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	fields JSON DEFAULT '[]' NOT NULL,
	PRIMARY KEY (subscription_id, type),
	FOREIGN KEY(subscription_id) REFERENCES event_subscription (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_event_source_account_id_type ON event_source (account_id, type);

CREATE TABLE event_subscription_destination (
	subscription_id VARCHAR(64) NOT NULL,
	destination_id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	PRIMARY KEY (subscription_id, destination_id),
	FOREIGN KEY(subscription_id) REFERENCES event_subscription (id) ON DELETE CASCADE,
	FOREIGN KEY(destination_id) REFERENCES event_destination (id) ON DELETE RESTRICT,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_event_subscription_destination_destination_id ON event_subscription_destination (destination_id);

CREATE TABLE ip_policy_rule (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	ip_policy_id VARCHAR(64) NOT NULL,
	cidr VARCHAR(64) NOT NULL,
	action VARCHAR(8) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	FOREIGN KEY(ip_policy_id) REFERENCES ip_policy (id) ON DELETE CASCADE
);

CREATE INDEX ix_ip_policy_rule_account_id_id ON ip_policy_rule (account_id, id);

CREATE INDEX ix_ip_policy_rule_ip_policy_id ON ip_policy_rule (ip_policy_id);

CREATE TABLE ip_restriction_policy (
	restriction_id VARCHAR(64) NOT NULL,
	position INTEGER NOT NULL,
	ip_policy_id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	PRIMARY KEY (restriction_id, position),
	FOREIGN KEY(restriction_id) REFERENCES ip_restriction (id) ON DELETE CASCADE,
	FOREIGN KEY(ip_policy_id) REFERENCES ip_policy (id) ON DELETE RESTRICT,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ip_restriction_policy_ip_policy_id ON ip_restriction_policy (ip_policy_id);

CREATE TABLE ssh_credential (
	owner_id VARCHAR(64) NOT NULL,
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	public_key TEXT NOT NULL,
	acl JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES principal (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_ssh_credential_account_id_id ON ssh_credential (account_id, id);

CREATE INDEX ix_ssh_credential_owner_id ON ssh_credential (owner_id);

CREATE TABLE tunnel_group_member (
	backend_id VARCHAR(64) NOT NULL,
	tunnel_id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	PRIMARY KEY (backend_id, tunnel_id),
	FOREIGN KEY(backend_id) REFERENCES tunnel_group_backend (id) ON DELETE CASCADE,
	FOREIGN KEY(tunnel_id) REFERENCES tunnel (id) ON DELETE CASCADE,
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE
);

CREATE INDEX ix_tunnel_group_member_tunnel_id ON tunnel_group_member (tunnel_id);

CREATE TABLE vault_secret (
	description TEXT NOT NULL,
	metadata TEXT NOT NULL,
	id VARCHAR(64) NOT NULL,
	account_id VARCHAR(64) NOT NULL,
	created_at DATETIME NOT NULL,
	vault_id VARCHAR(64) NOT NULL,
	vault_name VARCHAR(64) NOT NULL,
	name VARCHAR(64) NOT NULL,
	wrapped_value BLOB NOT NULL,
	updated_at DATETIME NOT NULL,
	created_by VARCHAR(64) NOT NULL,
	last_updated_by VARCHAR(64) NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT uq_vault_secret_vault_id_name UNIQUE (vault_id, name),
	FOREIGN KEY(account_id) REFERENCES account (id) ON DELETE CASCADE,
	FOREIGN KEY(vault_id) REFERENCES vault (id) ON DELETE RESTRICT
);

CREATE INDEX ix_vault_secret_account_id_id ON vault_secret (account_id, id);

CREATE INDEX ix_vault_secret_vault_id_id ON vault_secret (vault_id, id);

