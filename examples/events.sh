#!/usr/bin/env bash
# Sends sample events to a running intake, the way browsers and servers do.
#
#   examples/events.sh [BASE_URL]      default http://localhost:8080
#
# 1. a legacy beacon (GET, url-encoded JSON capsule between '?' and ';'),
# 2. a synchronous batch (POST /v1/events): two valid events and one invalid,
#    answered 207 with a result per event,
# 3. a hasty batch (?hasty=true), answered 202 at once.
set -euo pipefail
base=${1:-http://localhost:8080}

# 1. Beacon: {"event":{"responseStart":120,"loadEventEnd":950,"isHttps":true,
#    "mobileMode":"stable"},"revision":7,"schema":"NavigationTiming",
#    "webHost":"en.wikipedia.org","wiki":"enwiki"}, encoded like the browser's
#    encodeURIComponent.
curl -sS -o /dev/null -w 'beacon: HTTP %{http_code}\n' \
	"$base/beacon/event?%7B%22event%22%3A%7B%22responseStart%22%3A120%2C%22loadEventEnd%22%3A950%2C%22isHttps%22%3Atrue%2C%22mobileMode%22%3A%22stable%22%7D%2C%22revision%22%3A7%2C%22schema%22%3A%22NavigationTiming%22%2C%22webHost%22%3A%22en.wikipedia.org%22%2C%22wiki%22%3A%22enwiki%22%7D;"

# 2. Synchronous batch: validated before the answer.
curl -sS -w '\nbatch: HTTP %{http_code}\n' -H 'Content-Type: application/json' \
	--data-binary @- "$base/v1/events" <<'JSON'
[
  {"$schema": "/analytics/edit_funnel/1.0.0",
   "meta": {"stream": "analytics.edit_funnel"},
   "dt": "2026-11-30T10:00:00Z",
   "action": "init", "editor": "visualeditor",
   "session_token": "f3a9c2d4e5b6a7c8", "page_id": 15580374},
  {"schema": "SearchQuery", "revision": 5,
   "event": {"query": "event logging", "results": 42, "source": "fulltext"},
   "wiki": "enwiki", "webHost": "en.wikipedia.org"},
  {"$schema": "/analytics/edit_funnel/1.0.0",
   "meta": {"stream": "analytics.edit_funnel"},
   "action": "explode", "editor": "visualeditor",
   "session_token": "f3a9c2d4e5b6a7c8"}
]
JSON

# 3. Hasty batch: answered at once, validated by the processor.
curl -sS -w '\nhasty: HTTP %{http_code}\n' -H 'Content-Type: text/plain' \
	--data-binary '[{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700}}]' \
	"$base/v1/events?hasty=true"
