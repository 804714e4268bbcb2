// Package httpauth guards the admin routes of the HTTP services — registry
// writes, the dashboard and its replay: a request is admitted when its
// client address is in the admin networks, or when it carries the route's
// token as "Authorization: Bearer <token>". Everything else is refused with
// 403 and a JSON body that says how to get access.
//
// Before that, a request must be for one of the allowed host names (Hosts,
// security.allowed_hosts; else 421, against DNS rebinding) and must not be
// a cross-origin browser request (net/http's CrossOriginProtection; else
// 403, against cross-site request forgery).
//
// The client address is the socket's peer; only when that peer is a
// trusted proxy is the right-most X-Forwarded-For hop that is not itself a
// trusted proxy used instead (the intake's rule, intake.trusted_proxies),
// so that clients cannot name their own address.
package httpauth
