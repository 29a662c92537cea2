// Command goclient drives a live tunnelgw started with the platform profile through the
// platform's official Go client (github.com/ngrok/ngrok-api-go/v9), unchanged, and checks the
// typed errors code written against the platform branches on: IsErrorCode and IsNotFound.
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

	if made != nil {
		check("release the domain", domains.Delete(ctx, made.ID) == nil, "delete failed")
	}
	if failed {
		os.Exit(1)
	}
}
