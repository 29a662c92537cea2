"""The Terraform configurations the `terraform` tests apply: every resource of the platform's
provider (v0.8.0) and every data source, in two versions (`STEP_ONE`, then `STEP_TWO` with
every updatable attribute changed). `render()` fills in the PEMs and keys made for the run.
"""

from __future__ import annotations

import json
from string import Template

PROVIDER = """
terraform {
  required_providers {
    ngrok = { source = "ngrok/ngrok" }
  }
}
provider "ngrok" {}
"""

# Values changed between the two steps; everything else stays.
STEP_ONE = {
    "n": "one",
    "desc": "first description",
    "meta": json.dumps({"step": 1}),
    "cidr": "203.0.113.0/24",
    "action": "allow",
    "acl": '["bind:one.example.com"]',
    "enforced": "false",
    "active": "true",
    "url": "https://$${ngrok_domain.d.domain}",
    "policy_body": "one",
    "secret_value": "s3cr3t-one",
    "fmt": "json",
    "role": "arn:aws:iam::123456789012:role/one",
    "fields": '["status"]',
}
STEP_TWO = {
    **STEP_ONE,
    "n": "two",
    "desc": "second description",
    "meta": json.dumps({"step": 2}),
    "cidr": "198.51.100.0/24",
    "action": "deny",
    "acl": '["bind:two.example.com", "bind:*.two.example.com"]',
    "enforced": "true",
    "active": "false",
    "url": "https://$${ngrok_domain.d2.domain}",
    "policy_body": "two",
    "secret_value": "s3cr3t-two",
    "role": "arn:aws:iam::123456789012:role/two",
    "fields": '["status", "duration"]',
}

RESOURCES = Template(
    r"""
resource "ngrok_ip_policy" "p" {
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_ip_policy_rule" "r" {
  ip_policy_id = ngrok_ip_policy.p.id
  action       = "$action"
  cidr         = "$cidr"
  description  = "$desc"
  metadata     = jsonencode($meta)
}

resource "ngrok_ip_restriction" "ir" {
  type          = "dashboard"
  ip_policy_ids = [ngrok_ip_policy.p.id]
  description   = "$desc"
  metadata      = jsonencode($meta)
  enforced      = $enforced
}

resource "ngrok_domain" "d" {
  domain      = "app-$suffix.example.com"
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_domain" "d2" {
  domain = "web-$suffix.example.com"
}

resource "ngrok_tcp_address" "a" {
  description = "$desc"
  metadata    = jsonencode($meta)
  region      = "us"
}

resource "ngrok_api_key" "k" {
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_credential" "c" {
  description = "$desc"
  metadata    = jsonencode($meta)
  acl         = $acl
}

resource "ngrok_ssh_credential" "s" {
  public_key  = $ssh_public_key
  description = "$desc"
  metadata    = jsonencode($meta)
  acl         = $acl
}

resource "ngrok_service_user" "u" {
  name   = "svc-$n-$suffix"
  active = $active
}

resource "ngrok_certificate_authority" "ca" {
  ca_pem      = $ca_pem
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_tls_certificate" "t" {
  certificate_pem = $tls_chain_pem
  private_key_pem = $tls_key_pem
  description     = "$desc"
  metadata        = jsonencode($meta)
}

resource "ngrok_ssh_certificate_authority" "sshca" {
  description      = "$desc"
  metadata         = jsonencode($meta)
  private_key_type = "ecdsa"
  elliptic_curve   = "p256"
}

resource "ngrok_agent_ingress" "ai" {
  domain      = "agents-$suffix.example.com"
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_cloud_endpoint" "e" {
  url         = "$url"
  description = "$desc"
  metadata    = jsonencode($meta)
  traffic_policy = jsonencode({
    on_http_request = [{
      actions = [{
        type   = "custom-response"
        config = { status_code = 200, body = "$policy_body" }
      }]
    }]
  })
}

resource "ngrok_event_destination" "ed" {
  description = "$desc"
  metadata    = jsonencode($meta)
  format      = "$fmt"
  target = {
    firehose = {
      delivery_stream_arn = "arn:aws:firehose:us-east-1:123456789012:deliverystream/events"
      auth = { role = { role_arn = "$role" } }
    }
  }
}

resource "ngrok_event_subscription" "es" {
  description     = "$desc"
  metadata        = jsonencode($meta)
  destination_ids = [ngrok_event_destination.ed.id]
  sources = [{
    type   = "http_request_complete.v0"
    fields = $fields
  }]
}

resource "ngrok_vault" "v" {
  name        = "vault-$suffix"
  description = "$desc"
  metadata    = jsonencode($meta)
}

resource "ngrok_secret" "sec" {
  name        = "secret-$suffix"
  value       = "$secret_value"
  vault_id    = ngrok_vault.v.id
  description = "$desc"
  metadata    = jsonencode($meta)
}
"""
)

# Every data source: by id, and by the CEL filter the provider sends where it has one. Not
# here: `ngrok_kubernetes_operator`, whose Read fails in the provider itself, whatever the
# server answers (v0.8.0 converts a map of strings into an object type: "Value Conversion
# Error ... This is always an error in the provider"); tunnel_session, application_session
# and application_user, which read objects an agent or a visitor makes (see
# test_session_data_sources).
DATA_SOURCES = Template(
    r"""
data "ngrok_ip_policy" "p" { id = ngrok_ip_policy.p.id }
data "ngrok_ip_policy_rule" "r" { id = ngrok_ip_policy_rule.r.id }
data "ngrok_ip_restriction" "ir" { id = ngrok_ip_restriction.ir.id }
data "ngrok_domain" "by_id" { id = ngrok_domain.d.id }
data "ngrok_domain" "by_name" { domain = ngrok_domain.d.domain }
data "ngrok_tcp_address" "by_id" { id = ngrok_tcp_address.a.id }
data "ngrok_tcp_address" "by_addr" { addr = ngrok_tcp_address.a.addr }
data "ngrok_api_key" "k" { id = ngrok_api_key.k.id }
data "ngrok_credential" "c" { id = ngrok_credential.c.id }
data "ngrok_ssh_credential" "s" { id = ngrok_ssh_credential.s.id }
data "ngrok_service_user" "u" { id = ngrok_service_user.u.id }
data "ngrok_certificate_authority" "ca" { id = ngrok_certificate_authority.ca.id }
data "ngrok_tls_certificate" "t" { id = ngrok_tls_certificate.t.id }
data "ngrok_ssh_certificate_authority" "sshca" { id = ngrok_ssh_certificate_authority.sshca.id }
data "ngrok_agent_ingress" "by_id" { id = ngrok_agent_ingress.ai.id }
data "ngrok_agent_ingress" "by_domain" { domain = ngrok_agent_ingress.ai.domain }
data "ngrok_cloud_endpoint" "e" { id = ngrok_cloud_endpoint.e.id }
data "ngrok_event_destination" "ed" { id = ngrok_event_destination.ed.id }
data "ngrok_event_subscription" "es" { id = ngrok_event_subscription.es.id }
data "ngrok_vault" "by_id" { id = ngrok_vault.v.id }
data "ngrok_vault" "by_name" { name = ngrok_vault.v.name }
data "ngrok_secret" "by_id" { id = ngrok_secret.sec.id }
data "ngrok_secret" "by_name" { name = ngrok_secret.sec.name }

output "looked_up" {
  value = {
    policy          = data.ngrok_ip_policy.p.description
    rule_cidr       = data.ngrok_ip_policy_rule.r.cidr
    restriction     = data.ngrok_ip_restriction.ir.type
    domain_by_id    = data.ngrok_domain.by_id.domain
    domain_by_name  = data.ngrok_domain.by_name.id
    addr_by_id      = data.ngrok_tcp_address.by_id.addr
    addr_by_addr    = data.ngrok_tcp_address.by_addr.id
    api_key         = data.ngrok_api_key.k.description
    credential      = data.ngrok_credential.c.description
    ssh_credential  = data.ngrok_ssh_credential.s.description
    service_user    = data.ngrok_service_user.u.name
    ca              = data.ngrok_certificate_authority.ca.subject_common_name
    tls             = data.ngrok_tls_certificate.t.subject_common_name
    ssh_ca          = data.ngrok_ssh_certificate_authority.sshca.key_type
    ingress_by_id   = data.ngrok_agent_ingress.by_id.domain
    ingress_by_name = data.ngrok_agent_ingress.by_domain.id
    endpoint        = data.ngrok_cloud_endpoint.e.url
    destination     = data.ngrok_event_destination.ed.description
    subscription    = data.ngrok_event_subscription.es.description
    vault_by_id     = data.ngrok_vault.by_id.name
    vault_by_name   = data.ngrok_vault.by_name.id
    secret_by_id    = data.ngrok_secret.by_id.name
    secret_by_name  = data.ngrok_secret.by_name.id
  }
}
"""
)


def render(values: dict[str, str], *, data_sources: bool) -> str:
    """The configuration for one step (`values` holds the step's and the run's values)."""
    # `$suffix` may appear inside a step's own values (the URL); substitute twice.
    filled = {k: Template(v).safe_substitute(values) for k, v in values.items()}
    text = PROVIDER + RESOURCES.substitute(filled)
    if data_sources:
        text += DATA_SOURCES.substitute(filled)
    return text
