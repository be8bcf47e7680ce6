#!/usr/bin/env bash
# The curl walkthrough of docs/http.md, runnable as it is (tests/system/test_web_docs.py runs it):
#   STREAMDELAY_TOKENS='ops:ops-token-0123456789abcdef:read,write,consume,admin' \
#     streamdelay serve --queue orders &
#   SD=http://127.0.0.1:8080 TOKEN=ops-token-0123456789abcdef bash walkthrough.sh
# Needs curl and jq.
set -euo pipefail
SD=${SD:-http://127.0.0.1:8080}
AUTH="Authorization: Bearer ${TOKEN:?set TOKEN to a token with every scope}"

# --- enqueue
curl -sS -X POST "$SD/v1/queues/orders/jobs" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"topic": "order.close", "body": {"order_id": 42}, "delay": "15m", "id": "close-42"}'
echo
# the same id again: 200 and "created": false, nothing changes
curl -sS -o /dev/null -w '%{http_code}\n' -X POST "$SD/v1/queues/orders/jobs" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"topic": "order.close", "id": "close-42"}'

# --- batch
curl -sS -X POST "$SD/v1/queues/orders/jobs:batch" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"jobs": [
    {"topic": "order.close", "body": {"order_id": 43}, "delay": 900, "id": "close-43"},
    {"topic": "order.close", "body": {"order_id": 44}, "at": "2030-01-31T09:30:00Z", "id": "close-44"}]}' \
  | jq -c '[.results[] | {id, created}]'

# --- inspect
curl -sS "$SD/v1/queues/orders/jobs/close-42" -H "$AUTH" | jq -c '{id, state, body, attempts}'
curl -sS -X POST "$SD/v1/queues/orders/jobs/close-42:reschedule" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"delay": "1h"}'
echo
curl -sS "$SD/v1/queues/orders/jobs?state=delayed&limit=2" -H "$AUTH" | jq -c '[.jobs[].id]'
curl -sS "$SD/v1/queues/orders/stats" -H "$AUTH" | jq -c '.topics["order.close"] | {delayed, ready}'
curl -sS -X DELETE "$SD/v1/queues/orders/jobs/close-43" -H "$AUTH"
echo

# --- consume
curl -sS -X POST "$SD/v1/queues/orders/jobs" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"topic": "mail.send", "body": {"to": "ada@example.com"}, "id": "mail-1"}' > /dev/null
RESERVED=$(curl -sS -X POST "$SD/v1/queues/orders/topics/mail.send:reserve" -H "$AUTH" \
  -H 'Content-Type: application/json' \
  -d '{"group": "mailers", "consumer": "curl-1", "wait_ms": 5000, "count": 10}')
echo "$RESERVED" | jq -c '.deliveries[] | {id, body, attempt}'
RECEIPT=$(echo "$RESERVED" | jq -r '.deliveries[0].receipt')
curl -sS -X POST "$SD/v1/queues/orders/deliveries/$RECEIPT:touch" -H "$AUTH"
echo
curl -sS -X POST "$SD/v1/queues/orders/deliveries/$RECEIPT:ack" -H "$AUTH"
echo
# a second ack of the same delivery: 409, the receipt is stale
curl -sS -X POST "$SD/v1/queues/orders/deliveries/$RECEIPT:ack" -H "$AUTH" | jq -c .error.code

# --- fail
curl -sS -X POST "$SD/v1/queues/orders/jobs" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"topic": "mail.send", "id": "mail-2", "max_attempts": 2, "backoff": [0]}' > /dev/null
for attempt in 1 2; do
  RECEIPT=$(curl -sS -X POST "$SD/v1/queues/orders/topics/mail.send:reserve" -H "$AUTH" \
    -H 'Content-Type: application/json' -d '{"group": "mailers", "wait_ms": 5000}' \
    | jq -r '.deliveries[0].receipt')
  curl -sS -X POST "$SD/v1/queues/orders/deliveries/$RECEIPT:fail" -H "$AUTH" \
    -H 'Content-Type: application/json' -d "{\"error\": \"SMTP 451 (attempt $attempt)\"}"
  echo
done
curl -sS "$SD/v1/queues/orders/dead?topic=mail.send" -H "$AUTH" \
  | jq -c '.jobs[] | {id, attempts, error}'
curl -sS -X POST "$SD/v1/queues/orders/dead:replay" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"id": "mail-2", "delay": 60}'
echo
curl -sS -X DELETE "$SD/v1/queues/orders/jobs/mail-2" -H "$AUTH" > /dev/null

# --- pause
curl -sS -X POST "$SD/v1/queues/orders/topics/mail.send:pause" -H "$AUTH"
echo
curl -sS -X POST "$SD/v1/queues/orders/topics/mail.send:resume" -H "$AUTH"
echo

# --- errors
curl -sS -X POST "$SD/v1/queues/orders/jobs" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"topic": "order.close", "ttr": 0.5}'
echo
curl -sS -o /dev/null -w '%{http_code}\n' "$SD/v1/queues/orders/stats"

# --- search
curl -sS "$SD/v1/queues/orders/search?state=delayed&body=order_id%3D44" -H "$AUTH" \
  | jq -c '[.jobs[].id]'
curl -sS -X POST "$SD/v1/queues/orders/jobs:bulk" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"action": "cancel", "state": "delayed", "topic": "order.close", "dry_run": true}' \
  | jq -c '{matched, changed, cursor}'
