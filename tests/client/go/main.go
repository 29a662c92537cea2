// Command goclient drives a live tunnelgw started with the platform profile through the
// platform's official Go client (github.com/ngrok/ngrok-api-go/v9), unchanged, and checks the
// typed errors code written against the platform branches on: IsErrorCode and IsNotFound; it
// also drives AI gateway API keys and a reserved domain's resolves_to as the client sends them.
//
// Usage: TUNNELGW_BASE_URL=http://127.0.0.1:PORT TUNNELGW_TOKEN=tgw_... goclient
// It prints one line per check ("ok NAME" or "FAIL NAME: why") and exits 1 if any failed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	ngrok "github.com/ngrok/ngrok-api-go/v9"
	"github.com/ngrok/ngrok-api-go/v9/ai_gateway_api_keys"
	"github.com/ngrok/ngrok-api-go/v9/api_keys"
	"github.com/ngrok/ngrok-api-go/v9/endpoints"
	"github.com/ngrok/ngrok-api-go/v9/ip_policies"
	"github.com/ngrok/ngrok-api-go/v9/ip_policy_rules"
	"github.com/ngrok/ngrok-api-go/v9/reserved_domains"
)

const policy = "on_http_request:\n  - actions:\n      - type: custom-response\n        config: {status_code: 200, body: hi}\n"

var failed bool

func check(name string, ok bool, detail any) {
	if ok {
		fmt.Printf("ok %s\n", name)
		return
	}
	failed = true
	fmt.Printf("FAIL %s: %v\n", name, detail)
}

// apiError is the client's typed error behind err, or nil.
func apiError(err error) *ngrok.Error {
	var typed *ngrok.Error
	if errors.As(err, &typed) {
		return typed
	}
	return nil
}

func main() {
	base, token := os.Getenv("TUNNELGW_BASE_URL"), os.Getenv("TUNNELGW_TOKEN")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	config := ngrok.NewClientConfig(token, ngrok.WithBaseURL(base))
	unique := fmt.Sprintf("go%d", time.Now().UnixNano())

	// A domain reserved twice: the operator's "already exists" branch.
	domains := reserved_domains.NewClient(config)
	name := unique + ".example.com"
	made, err := domains.Create(ctx, &ngrok.ReservedDomainCreate{Domain: name})
	check("reserve a domain", err == nil, err)
	_, err = domains.Create(ctx, &ngrok.ReservedDomainCreate{Domain: name})
	typed := apiError(err)
	check("a second reservation is IsErrorCode(err, 413)", ngrok.IsErrorCode(err, 413), err)
	check("... with status 400", typed != nil && typed.StatusCode == 400, err)
	check("... and tunnelgw's code in details",
		typed != nil && typed.Details["tunnelgw_code"] == "ERR_DOMAIN_IN_USE", err)

	// An unknown id: IsNotFound, and no code to match.
	_, err = domains.Get(ctx, "rd_000000000000000000000000000")
	typed = apiError(err)
	check("an unknown id is IsNotFound", ngrok.IsNotFound(err), err)
	check("... without an error code", typed != nil && typed.ErrorCode == "", err)
	check("... with the operation id", typed != nil && typed.OperationID() != "", err)

	// A domain a cloud endpoint is on is not released (the operator retries 446).
	shared := "https://" + unique + ".tunnelgw.test"
	endpoint, err := endpoints.NewClient(config).Create(ctx, &ngrok.EndpointCreate{
		URL: shared, Type: "cloud", TrafficPolicy: policy,
	})
	check("create a cloud endpoint", err == nil, err)
	if endpoint != nil && endpoint.Domain != nil {
		err = domains.Delete(ctx, endpoint.Domain.ID)
		check("deleting its domain is IsErrorCode(err, 446)", ngrok.IsErrorCode(err, 446), err)
		check("... then after the endpoint goes, it is deleted",
			endpoints.NewClient(config).Delete(ctx, endpoint.ID) == nil &&
				domains.Delete(ctx, endpoint.Domain.ID) == nil, "delete failed")
	}

	// An invalid CIDR.
	ipPolicy, err := ip_policies.NewClient(config).Create(ctx, &ngrok.IPPolicyCreate{})
	check("create an IP policy", err == nil, err)
	if ipPolicy != nil {
		allow := "allow"
		_, err = ip_policy_rules.NewClient(config).Create(ctx, &ngrok.IPPolicyRuleCreate{
			IPPolicyID: ipPolicy.ID, CIDR: "10.0.0.0/33", Action: &allow,
		})
		check("an invalid CIDR is IsErrorCode(err, 1406)", ngrok.IsErrorCode(err, 1406), err)
		check("... deleting the policy", ip_policies.NewClient(config).Delete(ctx, ipPolicy.ID) == nil, "")
	}

	// A well-formed but unknown credential.
	stranger := ngrok.NewClientConfig("tgw_"+unique+"00000000000000000000000000", ngrok.WithBaseURL(base))
	_, err = api_keys.NewClient(stranger).Get(ctx, "ak_000000000000000000000000000")
	typed = apiError(err)
	check("an unknown credential is IsErrorCode(err, 203)", ngrok.IsErrorCode(err, 203), err)
	check("... with status 403", typed != nil && typed.StatusCode == 403, err)

	aiGatewayKeys(ctx, config, unique)
	resolvesTo(ctx, domains, unique)

	if made != nil {
		check("release the domain", domains.Delete(ctx, made.ID) == nil, "delete failed")
	}
	if failed {
		os.Exit(1)
	}
}

// aiGatewayKeys: create (token once), get, list, update (an empty endpoint id unsets it),
// delete, then IsNotFound.
func aiGatewayKeys(ctx context.Context, config *ngrok.ClientConfig, unique string) {
	internal := "https://" + unique + ".internal"
	endpoint, err := endpoints.NewClient(config).Create(ctx, &ngrok.EndpointCreate{
		URL: internal, Type: "cloud", TrafficPolicy: policy,
	})
	check("create a cloud endpoint for an AI gateway key", err == nil, err)
	if endpoint == nil {
		return
	}
	defer func() { _ = endpoints.NewClient(config).Delete(ctx, endpoint.ID) }()
	keys := ai_gateway_api_keys.NewClient(config)
	key, err := keys.Create(ctx, &ngrok.AIGatewayAPIKeyCreate{
		Description: "assistant", Metadata: "{}", EndpointID: endpoint.ID,
	})
	check("create an AI gateway API key", err == nil, err)
	if key == nil {
		return
	}
	check("... its token shown once, its endpoint named",
		key.Token != "" && key.DisplayName != "" && key.Endpoint.ID == endpoint.ID, key)
	got, err := keys.Get(ctx, key.ID)
	check("get it without its token", err == nil && got.Token == "" && got.Description == "assistant", err)
	listed := 0
	iter := keys.List(nil)
	for iter.Next(ctx) {
		if iter.Item().ID == key.ID {
			listed++
		}
	}
	check("list it", iter.Err() == nil && listed == 1, iter.Err())
	description, none := "assistant (prod)", ""
	changed, err := keys.Update(ctx, &ngrok.AIGatewayAPIKeyUpdate{
		ID: key.ID, Description: &description, EndpointID: &none,
	})
	check("update it, unsetting its endpoint",
		err == nil && changed.Description == description && changed.Endpoint.ID == "", err)
	check("delete it", keys.Delete(ctx, key.ID) == nil, "delete failed")
	_, err = keys.Get(ctx, key.ID)
	check("... then it is IsNotFound", ngrok.IsNotFound(err), err)
}

// resolvesTo: a point-of-presence code on create; an update without the field keeps it; an
// explicit empty list (omitzero sends it, a nil slice it omits) resets it to global.
func resolvesTo(ctx context.Context, domains *reserved_domains.Client, unique string) {
	pinned, err := domains.Create(ctx, &ngrok.ReservedDomainCreate{
		Domain:     "pinned-" + unique + ".example.com",
		ResolvesTo: []ngrok.ReservedDomainResolvesToEntry{{Value: "us-cal-1"}, {Value: "eu"}},
	})
	check("reserve a domain pinned to us-cal-1 and eu",
		err == nil && len(pinned.ResolvesTo) == 2 && pinned.ResolvesTo[0].Value == "us-cal-1", err)
	if pinned == nil {
		return
	}
	description := "kept"
	kept, err := domains.Update(ctx, &ngrok.ReservedDomainUpdate{ID: pinned.ID, Description: &description})
	check("an update without resolves_to keeps it", err == nil && len(kept.ResolvesTo) == 2, err)
	reset, err := domains.Update(ctx, &ngrok.ReservedDomainUpdate{
		ID: pinned.ID, ResolvesTo: []ngrok.ReservedDomainResolvesToEntry{},
	})
	check("an empty list resets it to global", err == nil && len(reset.ResolvesTo) == 0, err)
	check("release the pinned domain", domains.Delete(ctx, pinned.ID) == nil, "delete failed")
}
