// The official Go client (github.com/ngrok/ngrok-api-go/v9), unchanged, drives every family
// tunnelgw serves the way the client's own integration test (integration_test.go) drives IP
// policies: create equals get, update equals get, the list holds the updated object, delete,
// then get is IsNotFound. Run from pytest (tests/client/test_go_client_families.py) against a
// live `tunnelgw serve --profile platform`; skipped without TUNNELGW_BASE_URL.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"testing"
	"time"

	ngrok "github.com/ngrok/ngrok-api-go/v9"
	"github.com/ngrok/ngrok-api-go/v9/agent_ingresses"
	"github.com/ngrok/ngrok-api-go/v9/ai_gateway_api_keys"
	"github.com/ngrok/ngrok-api-go/v9/api_keys"
	"github.com/ngrok/ngrok-api-go/v9/backends/http_response"
	"github.com/ngrok/ngrok-api-go/v9/backends/tunnel_group"
	"github.com/ngrok/ngrok-api-go/v9/bot_users"
	"github.com/ngrok/ngrok-api-go/v9/certificate_authorities"
	"github.com/ngrok/ngrok-api-go/v9/credentials"
	"github.com/ngrok/ngrok-api-go/v9/endpoints"
	"github.com/ngrok/ngrok-api-go/v9/event_destinations"
	"github.com/ngrok/ngrok-api-go/v9/event_sources"
	"github.com/ngrok/ngrok-api-go/v9/event_subscriptions"
	"github.com/ngrok/ngrok-api-go/v9/ip_policies"
	"github.com/ngrok/ngrok-api-go/v9/ip_policy_rules"
	"github.com/ngrok/ngrok-api-go/v9/ip_restrictions"
	"github.com/ngrok/ngrok-api-go/v9/kubernetes_operators"
	"github.com/ngrok/ngrok-api-go/v9/reserved_addrs"
	"github.com/ngrok/ngrok-api-go/v9/reserved_domains"
	"github.com/ngrok/ngrok-api-go/v9/secrets"
	"github.com/ngrok/ngrok-api-go/v9/service_users"
	"github.com/ngrok/ngrok-api-go/v9/ssh_certificate_authorities"
	"github.com/ngrok/ngrok-api-go/v9/ssh_credentials"
	"github.com/ngrok/ngrok-api-go/v9/ssh_host_certificates"
	"github.com/ngrok/ngrok-api-go/v9/ssh_user_certificates"
	"github.com/ngrok/ngrok-api-go/v9/tls_certificates"
	"github.com/ngrok/ngrok-api-go/v9/vaults"
)

// family is one collection: how to create, read, change, list and delete one object of it.
type family[T any] struct {
	create func(context.Context) (*T, error)
	get    func(context.Context, string) (*T, error)
	update func(context.Context, string) (*T, error)
	list   func() ngrok.Iter[*T]
	delete func(context.Context, string) error
	id     func(*T) string
	// createOnly clears what only the create answer holds (a token shown once).
	createOnly func(*T)
}

func roundTrip[T any](t *testing.T, f family[T]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := f.create(ctx)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := f.id(created)
	if f.createOnly != nil {
		f.createOnly(created)
	}
	got, err := f.get(ctx, id)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !reflect.DeepEqual(created, got) {
		t.Fatalf("create != get:\n%v\n%v", created, got)
	}
	updated, err := f.update(ctx, id)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	got, err = f.get(ctx, id)
	if err != nil {
		t.Fatalf("get after update: %v", err)
	}
	if !reflect.DeepEqual(updated, got) {
		t.Fatalf("update != get:\n%v\n%v", updated, got)
	}
	if reflect.DeepEqual(updated, created) {
		t.Fatalf("the update changed nothing: %v", updated)
	}
	iter, found := f.list(), false
	for iter.Next(ctx) {
		if f.id(iter.Item()) == id {
			found = true
			if !reflect.DeepEqual(iter.Item(), updated) {
				t.Fatalf("listed != get:\n%v\n%v", iter.Item(), updated)
			}
		}
	}
	if err := iter.Err(); err != nil || !found {
		t.Fatalf("list: found=%v err=%v", found, err)
	}
	if err := f.delete(ctx, id); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := f.get(ctx, id); !ngrok.IsNotFound(err) {
		t.Fatalf("get after delete: IsNotFound is false for %v", err)
	}
}

var (
	config *ngrok.ClientConfig
	unique = fmt.Sprintf("g%d", time.Now().UnixNano())
	meta   = ngrok.String(`{"changed": true}`)
)

func setup(t *testing.T) context.Context {
	t.Helper()
	base := os.Getenv("TUNNELGW_BASE_URL")
	if base == "" {
		t.Skip("TUNNELGW_BASE_URL is not set (a live tunnelgw serve --profile platform)")
	}
	config = ngrok.NewClientConfig(os.Getenv("TUNNELGW_TOKEN"), ngrok.WithBaseURL(base))
	return context.Background()
}

// must is v, or a panic (the test fails) for a setup step that failed.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sshPublicKey is a new ed25519 public key as an authorized_keys line.
func sshPublicKey() string {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	field := func(b []byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
		return append(out, b...)
	}
	blob := append(field([]byte("ssh-ed25519")), field(pub)...)
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob)
}

// selfSigned is a self-signed certificate (a CA when ca is true) and its key, as PEM.
func selfSigned(name string, ca bool) (string, string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		BasicConstraintsValid: true,
		IsCA:                  ca,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

func TestIPPolicies(t *testing.T) {
	setup(t)
	c := ip_policies.NewClient(config)
	roundTrip(t, family[ngrok.IPPolicy]{
		create: func(ctx context.Context) (*ngrok.IPPolicy, error) {
			return c.Create(ctx, &ngrok.IPPolicyCreate{Description: "ngrok-api-go tests"})
		},
		get: c.Get,
		update: func(ctx context.Context, id string) (*ngrok.IPPolicy, error) {
			return c.Update(ctx, &ngrok.IPPolicyUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.IPPolicy] { return c.List(nil) },
		delete: c.Delete,
		id:     func(x *ngrok.IPPolicy) string { return x.ID },
	})
}

func TestIPPolicyRulesAndRestrictions(t *testing.T) {
	ctx := setup(t)
	policy := must(ip_policies.NewClient(config).Create(ctx, &ngrok.IPPolicyCreate{}))
	defer ip_policies.NewClient(config).Delete(ctx, policy.ID)
	rules := ip_policy_rules.NewClient(config)
	roundTrip(t, family[ngrok.IPPolicyRule]{
		create: func(ctx context.Context) (*ngrok.IPPolicyRule, error) {
			return rules.Create(ctx, &ngrok.IPPolicyRuleCreate{
				CIDR: "203.0.113.0/24", IPPolicyID: policy.ID, Action: ngrok.String("allow"),
			})
		},
		get: rules.Get,
		update: func(ctx context.Context, id string) (*ngrok.IPPolicyRule, error) {
			return rules.Update(ctx, &ngrok.IPPolicyRuleUpdate{ID: id, CIDR: ngrok.String("198.51.100.7/32")})
		},
		list:   func() ngrok.Iter[*ngrok.IPPolicyRule] { return rules.List(nil) },
		delete: rules.Delete,
		id:     func(x *ngrok.IPPolicyRule) string { return x.ID },
	})
	restrictions := ip_restrictions.NewClient(config)
	roundTrip(t, family[ngrok.IPRestriction]{
		create: func(ctx context.Context) (*ngrok.IPRestriction, error) {
			return restrictions.Create(ctx, &ngrok.IPRestrictionCreate{Type: "dashboard", IPPolicyIDs: []string{policy.ID}})
		},
		get: restrictions.Get,
		update: func(ctx context.Context, id string) (*ngrok.IPRestriction, error) {
			return restrictions.Update(ctx, &ngrok.IPRestrictionUpdate{ID: id, Enforced: ngrok.Bool(true)})
		},
		list:   func() ngrok.Iter[*ngrok.IPRestriction] { return restrictions.List(nil) },
		delete: restrictions.Delete,
		id:     func(x *ngrok.IPRestriction) string { return x.ID },
	})
}

func TestReservedDomainsAndAddrs(t *testing.T) {
	setup(t)
	domains := reserved_domains.NewClient(config)
	roundTrip(t, family[ngrok.ReservedDomain]{
		create: func(ctx context.Context) (*ngrok.ReservedDomain, error) {
			return domains.Create(ctx, &ngrok.ReservedDomainCreate{Domain: unique + ".example.com"})
		},
		get: domains.Get,
		update: func(ctx context.Context, id string) (*ngrok.ReservedDomain, error) {
			return domains.Update(ctx, &ngrok.ReservedDomainUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.ReservedDomain] { return domains.List(nil) },
		delete: domains.Delete,
		id:     func(x *ngrok.ReservedDomain) string { return x.ID },
	})
	addrs := reserved_addrs.NewClient(config)
	roundTrip(t, family[ngrok.ReservedAddr]{
		create: func(ctx context.Context) (*ngrok.ReservedAddr, error) {
			return addrs.Create(ctx, &ngrok.ReservedAddrCreate{Description: "go"})
		},
		get: addrs.Get,
		update: func(ctx context.Context, id string) (*ngrok.ReservedAddr, error) {
			return addrs.Update(ctx, &ngrok.ReservedAddrUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.ReservedAddr] { return addrs.List(nil) },
		delete: addrs.Delete,
		id:     func(x *ngrok.ReservedAddr) string { return x.ID },
	})
}

func TestCredentialsAndKeys(t *testing.T) {
	setup(t)
	keys := api_keys.NewClient(config)
	roundTrip(t, family[ngrok.APIKey]{
		create: func(ctx context.Context) (*ngrok.APIKey, error) {
			return keys.Create(ctx, &ngrok.APIKeyCreate{Description: "go"})
		},
		get: keys.Get,
		update: func(ctx context.Context, id string) (*ngrok.APIKey, error) {
			return keys.Update(ctx, &ngrok.APIKeyUpdate{ID: id, Metadata: meta})
		},
		list:       func() ngrok.Iter[*ngrok.APIKey] { return keys.List(nil) },
		delete:     keys.Delete,
		id:         func(x *ngrok.APIKey) string { return x.ID },
		createOnly: func(x *ngrok.APIKey) { x.Token = nil },
	})
	creds := credentials.NewClient(config)
	roundTrip(t, family[ngrok.Credential]{
		create: func(ctx context.Context) (*ngrok.Credential, error) {
			return creds.Create(ctx, &ngrok.CredentialCreate{ACL: []string{"bind:go.example.com"}})
		},
		get: creds.Get,
		update: func(ctx context.Context, id string) (*ngrok.Credential, error) {
			return creds.Update(ctx, &ngrok.CredentialUpdate{ID: id, ACL: []string{"bind:*.example.com"}})
		},
		list:       func() ngrok.Iter[*ngrok.Credential] { return creds.List(nil) },
		delete:     creds.Delete,
		id:         func(x *ngrok.Credential) string { return x.ID },
		createOnly: func(x *ngrok.Credential) { x.Token = nil },
	})
	ssh := ssh_credentials.NewClient(config)
	roundTrip(t, family[ngrok.SSHCredential]{
		create: func(ctx context.Context) (*ngrok.SSHCredential, error) {
			return ssh.Create(ctx, &ngrok.SSHCredentialCreate{PublicKey: sshPublicKey()})
		},
		get: ssh.Get,
		update: func(ctx context.Context, id string) (*ngrok.SSHCredential, error) {
			return ssh.Update(ctx, &ngrok.SSHCredentialUpdate{ID: id, Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.SSHCredential] { return ssh.List(nil) },
		delete: ssh.Delete,
		id:     func(x *ngrok.SSHCredential) string { return x.ID },
	})
}

func TestUsers(t *testing.T) {
	setup(t)
	svc := service_users.NewClient(config)
	roundTrip(t, family[ngrok.ServiceUser]{
		create: func(ctx context.Context) (*ngrok.ServiceUser, error) {
			return svc.Create(ctx, &ngrok.ServiceUserCreate{Name: "svc-" + unique})
		},
		get: svc.Get,
		update: func(ctx context.Context, id string) (*ngrok.ServiceUser, error) {
			return svc.Update(ctx, &ngrok.ServiceUserUpdate{ID: id, Active: ngrok.Bool(false)})
		},
		list:   func() ngrok.Iter[*ngrok.ServiceUser] { return svc.List(nil) },
		delete: svc.Delete,
		id:     func(x *ngrok.ServiceUser) string { return x.ID },
	})
	bots := bot_users.NewClient(config)
	roundTrip(t, family[ngrok.BotUser]{
		create: func(ctx context.Context) (*ngrok.BotUser, error) {
			return bots.Create(ctx, &ngrok.BotUserCreate{Name: "bot-" + unique})
		},
		get: bots.Get,
		update: func(ctx context.Context, id string) (*ngrok.BotUser, error) {
			return bots.Update(ctx, &ngrok.BotUserUpdate{ID: id, Name: ngrok.String("bot2-" + unique)})
		},
		list:   func() ngrok.Iter[*ngrok.BotUser] { return bots.List(nil) },
		delete: bots.Delete,
		id:     func(x *ngrok.BotUser) string { return x.ID },
	})
}

func TestCertificates(t *testing.T) {
	ctx := setup(t)
	cas := certificate_authorities.NewClient(config)
	roundTrip(t, family[ngrok.CertificateAuthority]{
		create: func(ctx context.Context) (*ngrok.CertificateAuthority, error) {
			caPEM, _ := selfSigned("Go CA", true)
			return cas.Create(ctx, &ngrok.CertificateAuthorityCreate{CAPEM: caPEM})
		},
		get: cas.Get,
		update: func(ctx context.Context, id string) (*ngrok.CertificateAuthority, error) {
			return cas.Update(ctx, &ngrok.CertificateAuthorityUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.CertificateAuthority] { return cas.List(nil) },
		delete: cas.Delete,
		id:     func(x *ngrok.CertificateAuthority) string { return x.ID },
	})
	certs := tls_certificates.NewClient(config)
	roundTrip(t, family[ngrok.TLSCertificate]{
		create: func(ctx context.Context) (*ngrok.TLSCertificate, error) {
			cert, key := selfSigned("go.example.com", false)
			return certs.Create(ctx, &ngrok.TLSCertificateCreate{CertificatePEM: cert, PrivateKeyPEM: key})
		},
		get: certs.Get,
		update: func(ctx context.Context, id string) (*ngrok.TLSCertificate, error) {
			return certs.Update(ctx, &ngrok.TLSCertificateUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.TLSCertificate] { return certs.List(nil) },
		delete: certs.Delete,
		id:     func(x *ngrok.TLSCertificate) string { return x.ID },
	})
	sshCAs := ssh_certificate_authorities.NewClient(config)
	roundTrip(t, family[ngrok.SSHCertificateAuthority]{
		create: func(ctx context.Context) (*ngrok.SSHCertificateAuthority, error) {
			return sshCAs.Create(ctx, &ngrok.SSHCertificateAuthorityCreate{PrivateKeyType: "ed25519"})
		},
		get: sshCAs.Get,
		update: func(ctx context.Context, id string) (*ngrok.SSHCertificateAuthority, error) {
			return sshCAs.Update(ctx, &ngrok.SSHCertificateAuthorityUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.SSHCertificateAuthority] { return sshCAs.List(nil) },
		delete: sshCAs.Delete,
		id:     func(x *ngrok.SSHCertificateAuthority) string { return x.ID },
	})
	ca := must(sshCAs.Create(ctx, &ngrok.SSHCertificateAuthorityCreate{PrivateKeyType: "ecdsa"}))
	defer sshCAs.Delete(ctx, ca.ID)
	hosts := ssh_host_certificates.NewClient(config)
	roundTrip(t, family[ngrok.SSHHostCertificate]{
		create: func(ctx context.Context) (*ngrok.SSHHostCertificate, error) {
			return hosts.Create(ctx, &ngrok.SSHHostCertificateCreate{
				SSHCertificateAuthorityID: ca.ID, PublicKey: sshPublicKey(), Principals: []string{"host.example.com"},
			})
		},
		get: hosts.Get,
		update: func(ctx context.Context, id string) (*ngrok.SSHHostCertificate, error) {
			return hosts.Update(ctx, &ngrok.SSHHostCertificateUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.SSHHostCertificate] { return hosts.List(nil) },
		delete: hosts.Delete,
		id:     func(x *ngrok.SSHHostCertificate) string { return x.ID },
	})
	users := ssh_user_certificates.NewClient(config)
	roundTrip(t, family[ngrok.SSHUserCertificate]{
		create: func(ctx context.Context) (*ngrok.SSHUserCertificate, error) {
			return users.Create(ctx, &ngrok.SSHUserCertificateCreate{
				SSHCertificateAuthorityID: ca.ID, PublicKey: sshPublicKey(), Principals: []string{"deploy"},
			})
		},
		get: users.Get,
		update: func(ctx context.Context, id string) (*ngrok.SSHUserCertificate, error) {
			return users.Update(ctx, &ngrok.SSHUserCertificateUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.SSHUserCertificate] { return users.List(nil) },
		delete: users.Delete,
		id:     func(x *ngrok.SSHUserCertificate) string { return x.ID },
	})
}

func TestEndpointsAndIngresses(t *testing.T) {
	ctx := setup(t)
	domain := must(reserved_domains.NewClient(config).Create(ctx, &ngrok.ReservedDomainCreate{Domain: "ep" + unique + ".example.com"}))
	eps := endpoints.NewClient(config)
	roundTrip(t, family[ngrok.Endpoint]{
		create: func(ctx context.Context) (*ngrok.Endpoint, error) {
			return eps.Create(ctx, &ngrok.EndpointCreate{
				URL: "https://" + domain.Domain, Type: "cloud", TrafficPolicy: policy,
			})
		},
		get: eps.Get,
		update: func(ctx context.Context, id string) (*ngrok.Endpoint, error) {
			return eps.Update(ctx, &ngrok.EndpointUpdate{ID: id, Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.Endpoint] { return eps.List(nil) },
		delete: eps.Delete,
		id:     func(x *ngrok.Endpoint) string { return x.ID },
	})
	// AI gateway API keys belong to a cloud endpoint; the token is shown by the create only.
	endpoint := must(eps.Create(ctx, &ngrok.EndpointCreate{
		URL: "https://" + domain.Domain, Type: "cloud", TrafficPolicy: policy,
	}))
	keys := ai_gateway_api_keys.NewClient(config)
	roundTrip(t, family[ngrok.AIGatewayAPIKey]{
		create: func(ctx context.Context) (*ngrok.AIGatewayAPIKey, error) {
			return keys.Create(ctx, &ngrok.AIGatewayAPIKeyCreate{Description: "chat", EndpointID: endpoint.ID})
		},
		get: keys.Get,
		update: func(ctx context.Context, id string) (*ngrok.AIGatewayAPIKey, error) {
			return keys.Update(ctx, &ngrok.AIGatewayAPIKeyUpdate{ID: id, Description: ngrok.String("chat (prod)")})
		},
		list:       func() ngrok.Iter[*ngrok.AIGatewayAPIKey] { return keys.List(nil) },
		delete:     keys.Delete,
		id:         func(x *ngrok.AIGatewayAPIKey) string { return x.ID },
		createOnly: func(x *ngrok.AIGatewayAPIKey) { x.Token = "" },
	})
	if err := eps.Delete(ctx, endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if err := reserved_domains.NewClient(config).Delete(ctx, domain.ID); err != nil {
		t.Fatal(err)
	}
	ingresses := agent_ingresses.NewClient(config)
	roundTrip(t, family[ngrok.AgentIngress]{
		create: func(ctx context.Context) (*ngrok.AgentIngress, error) {
			return ingresses.Create(ctx, &ngrok.AgentIngressCreate{Domain: "agents." + unique + ".example.com"})
		},
		get: ingresses.Get,
		update: func(ctx context.Context, id string) (*ngrok.AgentIngress, error) {
			return ingresses.Update(ctx, &ngrok.AgentIngressUpdate{ID: id, Metadata: meta})
		},
		list:   func() ngrok.Iter[*ngrok.AgentIngress] { return ingresses.List(nil) },
		delete: ingresses.Delete,
		id:     func(x *ngrok.AgentIngress) string { return x.ID },
	})
}

func TestBackends(t *testing.T) {
	setup(t)
	responses := http_response.NewClient(config)
	roundTrip(t, family[ngrok.HTTPResponseBackend]{
		create: func(ctx context.Context) (*ngrok.HTTPResponseBackend, error) {
			return responses.Create(ctx, &ngrok.HTTPResponseBackendCreate{Body: "hi", StatusCode: int32Ptr(200)})
		},
		get: responses.Get,
		update: func(ctx context.Context, id string) (*ngrok.HTTPResponseBackend, error) {
			return responses.Update(ctx, &ngrok.HTTPResponseBackendUpdate{ID: id, Body: ngrok.String("bye")})
		},
		list:   func() ngrok.Iter[*ngrok.HTTPResponseBackend] { return responses.List(nil) },
		delete: responses.Delete,
		id:     func(x *ngrok.HTTPResponseBackend) string { return x.ID },
	})
	groups := tunnel_group.NewClient(config)
	roundTrip(t, family[ngrok.TunnelGroupBackend]{
		create: func(ctx context.Context) (*ngrok.TunnelGroupBackend, error) {
			return groups.Create(ctx, &ngrok.TunnelGroupBackendCreate{Labels: map[string]string{"app": "go"}})
		},
		get: groups.Get,
		update: func(ctx context.Context, id string) (*ngrok.TunnelGroupBackend, error) {
			return groups.Update(ctx, &ngrok.TunnelGroupBackendUpdate{ID: id, Labels: map[string]string{"app": "go2"}})
		},
		list:   func() ngrok.Iter[*ngrok.TunnelGroupBackend] { return groups.List(nil) },
		delete: groups.Delete,
		id:     func(x *ngrok.TunnelGroupBackend) string { return x.ID },
	})
}

func TestEvents(t *testing.T) {
	ctx := setup(t)
	dests := event_destinations.NewClient(config)
	target := func(role string) ngrok.EventTarget {
		return ngrok.EventTarget{Kinesis: &ngrok.EventTargetKinesis{
			StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/go",
			Auth:      ngrok.AWSAuth{Role: &ngrok.AWSRole{RoleARN: "arn:aws:iam::123456789012:role/" + role}},
		}}
	}
	roundTrip(t, family[ngrok.EventDestination]{
		create: func(ctx context.Context) (*ngrok.EventDestination, error) {
			return dests.Create(ctx, &ngrok.EventDestinationCreate{Format: "json", Target: target("one")})
		},
		get: dests.Get,
		update: func(ctx context.Context, id string) (*ngrok.EventDestination, error) {
			changed := target("two")
			return dests.Update(ctx, &ngrok.EventDestinationUpdate{ID: id, Target: &changed})
		},
		list:   func() ngrok.Iter[*ngrok.EventDestination] { return dests.List(nil) },
		delete: dests.Delete,
		id:     func(x *ngrok.EventDestination) string { return x.ID },
	})
	dest := must(dests.Create(ctx, &ngrok.EventDestinationCreate{Format: "json", Target: target("three")}))
	defer dests.Delete(ctx, dest.ID)
	subs := event_subscriptions.NewClient(config)
	roundTrip(t, family[ngrok.EventSubscription]{
		create: func(ctx context.Context) (*ngrok.EventSubscription, error) {
			return subs.Create(ctx, &ngrok.EventSubscriptionCreate{
				Sources:        []ngrok.EventSourceReplace{{Type: "ip_policy_created.v0"}},
				DestinationIDs: []string{dest.ID},
			})
		},
		get: subs.Get,
		update: func(ctx context.Context, id string) (*ngrok.EventSubscription, error) {
			return subs.Update(ctx, &ngrok.EventSubscriptionUpdate{ID: id, Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.EventSubscription] { return subs.List(nil) },
		delete: subs.Delete,
		id:     func(x *ngrok.EventSubscription) string { return x.ID },
	})
	// Event sources: a subresource with its own create, get, list and delete.
	sub := must(subs.Create(ctx, &ngrok.EventSubscriptionCreate{DestinationIDs: []string{dest.ID}}))
	defer subs.Delete(ctx, sub.ID)
	sources := event_sources.NewClient(config)
	made := must(sources.Create(ctx, &ngrok.EventSourceCreate{SubscriptionID: sub.ID, Type: "ip_policy_updated.v0"}))
	// A fresh item per call: the client's Get and Delete clear the one they are given.
	item := func() *ngrok.EventSourceItem {
		return &ngrok.EventSourceItem{SubscriptionID: sub.ID, Type: made.Type}
	}
	got := must(sources.Get(ctx, item()))
	if !reflect.DeepEqual(made, got) {
		t.Fatalf("event source create != get:\n%v\n%v", made, got)
	}
	listed := must(sources.List(ctx, sub.ID))
	if len(listed.Sources) != 1 || !reflect.DeepEqual(listed.Sources[0], *made) {
		t.Fatalf("event source list: %v", listed)
	}
	if err := sources.Delete(ctx, item()); err != nil {
		t.Fatal(err)
	}
	if _, err := sources.Get(ctx, item()); !ngrok.IsNotFound(err) {
		t.Fatalf("event source get after delete: %v", err)
	}
}

func TestVaultsAndSecrets(t *testing.T) {
	ctx := setup(t)
	vs := vaults.NewClient(config)
	roundTrip(t, family[ngrok.Vault]{
		create: func(ctx context.Context) (*ngrok.Vault, error) {
			return vs.Create(ctx, &ngrok.VaultCreate{Name: "v-" + unique})
		},
		get: vs.Get,
		update: func(ctx context.Context, id string) (*ngrok.Vault, error) {
			return vs.Update(ctx, &ngrok.VaultUpdate{ID: id, Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.Vault] { return vs.List(nil) },
		delete: vs.Delete,
		id:     func(x *ngrok.Vault) string { return x.ID },
	})
	vault := must(vs.Create(ctx, &ngrok.VaultCreate{Name: "w-" + unique}))
	defer vs.Delete(ctx, vault.ID)
	ss := secrets.NewClient(config)
	roundTrip(t, family[ngrok.Secret]{
		create: func(ctx context.Context) (*ngrok.Secret, error) {
			return ss.Create(ctx, &ngrok.SecretCreate{Name: "s-" + unique, Value: "one", VaultID: vault.ID})
		},
		get: ss.Get,
		update: func(ctx context.Context, id string) (*ngrok.Secret, error) {
			return ss.Update(ctx, &ngrok.SecretUpdate{ID: id, Value: ngrok.String("two"), Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.Secret] { return ss.List(nil) },
		delete: ss.Delete,
		id:     func(x *ngrok.Secret) string { return x.ID },
	})
}

func TestKubernetesOperators(t *testing.T) {
	setup(t)
	ops := kubernetes_operators.NewClient(config)
	roundTrip(t, family[ngrok.KubernetesOperator]{
		create: func(ctx context.Context) (*ngrok.KubernetesOperator, error) {
			return ops.Create(ctx, &ngrok.KubernetesOperatorCreate{
				EnabledFeatures: []string{"ingress"},
				Region:          "global",
				Deployment:      ngrok.KubernetesOperatorDeployment{Name: "op", Namespace: "ns", Version: "0.19.0"},
			})
		},
		get: ops.Get,
		update: func(ctx context.Context, id string) (*ngrok.KubernetesOperator, error) {
			return ops.Update(ctx, &ngrok.KubernetesOperatorUpdate{ID: id, Description: ngrok.String("changed")})
		},
		list:   func() ngrok.Iter[*ngrok.KubernetesOperator] { return ops.List(nil) },
		delete: ops.Delete,
		id:     func(x *ngrok.KubernetesOperator) string { return x.ID },
	})
}

func int32Ptr(v int32) *int32 { return &v }
