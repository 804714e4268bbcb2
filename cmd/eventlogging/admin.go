package main

import (
	"fmt"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/intake"
)

// adminGuard is the guard of an admin route: c's admin networks, the
// intake's trusted proxies (whose X-Forwarded-For names the client) and
// the route's token, set by tokenKey.
func adminGuard(c config.Config, what, tokenKey, token string) (*httpauth.Guard, error) {
	nets, err := intake.ParseTrustedProxies(c.Security.AdminNetworks)
	if err != nil {
		return nil, fmt.Errorf("security.admin_networks: %w", err)
	}
	proxies, err := intake.ParseTrustedProxies(c.Intake.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("intake.trusted_proxies: %w", err)
	}
	return httpauth.New(httpauth.Config{
		Networks:       nets,
		TrustedProxies: proxies,
		Token:          token,
		What:           what,
		NetworksKey:    "security.admin_networks",
		TokenKey:       tokenKey,
	}), nil
}

// registryGuard admits the registry's writes (register, delete, PUT
// /config, PUT /mode); reads, lookups and compatibility checks stay open.
func registryGuard(c config.Config) (*httpauth.Guard, error) {
	return adminGuard(c, "registry writes", "registry.write_token", c.Registry.AdminToken())
}

// dashboardGuard admits clients to the whole dashboard: pages, API, live
// tail and replay.
func dashboardGuard(c config.Config) (*httpauth.Guard, error) {
	return adminGuard(c, "the dashboard and its replay", "dashboard.token", c.Dashboard.AdminToken())
}
