<?php
// A PHP consumer for `streamdelay serve`: Debian's php-cli alone (json and the http stream
// wrapper are built in; no curl extension, no Composer package).
//
//   STREAMDELAY_HTTP_URL=http://127.0.0.1:8080 STREAMDELAY_TOKEN=... php consumer.php
//   STREAMDELAY_HTTP_URL=... php consumer.php enqueue [id-prefix]   # the demo jobs first
//
// `enqueue` adds <prefix>ok-1 (one request) and <prefix>ok-2, <prefix>poison (one batch
// request); <prefix>poison has "fail": true in its body and max_attempts 3.
// Without an argument it reserves deliveries of STREAMDELAY_TOPIC (default "order.close") on
// STREAMDELAY_QUEUE (default "orders") in the group STREAMDELAY_GROUP (default "workers") with a
// long poll, and settles each by its receipt: a body with "fail": true fails (the server retries
// it with backoff, or after STREAMDELAY_RETRY_DELAY seconds when set, and makes it a dead letter
// after max_attempts); everything else is acknowledged. A 409 means the receipt went stale (the
// delivery was reclaimed after its ttr, cancelled or replaced): it is only logged.
// It stops on SIGINT / SIGTERM after the deliveries in hand, or after STREAMDELAY_IDLE_EXIT
// empty polls in a row (default 0: never). Each event is printed as one JSON line.

declare(strict_types=1);

$base = rtrim(getenv('STREAMDELAY_HTTP_URL') ?: 'http://127.0.0.1:8080', '/');
$token = getenv('STREAMDELAY_TOKEN') ?: '';
$queue = getenv('STREAMDELAY_QUEUE') ?: 'orders';
$topic = getenv('STREAMDELAY_TOPIC') ?: 'order.close';
$group = getenv('STREAMDELAY_GROUP') ?: 'workers';
$consumer = getenv('STREAMDELAY_CONSUMER') ?: 'php-' . gethostname() . '-' . getmypid();
$waitMs = (int) (getenv('STREAMDELAY_WAIT_MS') ?: 5000); // long poll, at most 30000
$idleExit = (int) (getenv('STREAMDELAY_IDLE_EXIT') ?: 0);
$retryDelay = getenv('STREAMDELAY_RETRY_DELAY'); // seconds; unset: the server's backoff

/** POST a JSON body to a path under /v1/queues/{queue}; returns [status, decoded reply or null]. */
function post(string $path, array $body): array
{
    global $base, $token, $queue, $waitMs;
    $headers = ['Content-Type: application/json', 'Accept: application/json', 'Connection: close'];
    if ($token !== '') {
        $headers[] = 'Authorization: Bearer ' . $token;
    }
    $context = stream_context_create(['http' => [
        'method' => 'POST',
        'header' => implode("\r\n", $headers),
        'content' => json_encode((object) $body, JSON_THROW_ON_ERROR),
        'protocol_version' => 1.1,
        'ignore_errors' => true, // read the JSON error body of a 4xx / 5xx too
        'timeout' => $waitMs / 1000 + 10,
    ]]);
    $url = $base . '/v1/queues/' . rawurlencode($queue) . $path;
    $text = @file_get_contents($url, false, $context);
    if ($text === false) {
        throw new RuntimeException("POST $path: " . (error_get_last()['message'] ?? 'no answer'));
    }
    // $http_response_header is set by the http wrapper: its first line holds the status.
    preg_match('{^HTTP/\S+ (\d{3})}', $http_response_header[0] ?? '', $match);
    $status = (int) ($match[1] ?? 0);
    return [$status, $text === '' ? null : json_decode($text, true, 64, JSON_THROW_ON_ERROR)];
}

function event(array $fields): void
{
    echo json_encode($fields), "\n";
}

/** Settle one delivery by its receipt ("ack", "fail" or "touch"); false when it went stale. */
function settle(array $delivery, string $action, array $body = []): bool
{
    [$status, $reply] = post('/deliveries/' . rawurlencode($delivery['receipt']) . ':' . $action, $body);
    if ($status === 409) {
        event(['event' => 'stale', 'id' => $delivery['id'], 'action' => $action]);
        return false;
    }
    if ($status >= 300) {
        throw new RuntimeException("$action {$delivery['id']}: HTTP $status " . json_encode($reply));
    }
    return true;
}

/** The work itself: here a stand-in that fails poison jobs and acknowledges the others. */
function handle(array $delivery): void
{
    global $retryDelay;
    $body = is_array($delivery['body']) ? $delivery['body'] : [];
    if (!empty($body['fail'])) {
        $failure = ['error' => 'order ' . ($body['order_id'] ?? '?') . ' cannot be closed'];
        if ($retryDelay !== false && $retryDelay !== '') {
            $failure['retry_delay'] = (float) $retryDelay;
        }
        if (settle($delivery, 'fail', $failure)) {
            event(['event' => 'failed', 'id' => $delivery['id'], 'attempt' => $delivery['attempt']]);
        }
        return;
    }
    if (settle($delivery, 'ack')) {
        event(['event' => 'acked', 'id' => $delivery['id'], 'attempt' => $delivery['attempt']]);
    }
}

/** The demo jobs: one per request, then two in one batch request. */
function enqueue_demo(string $prefix): void
{
    global $topic;
    $jobs = [
        ['/jobs', ['topic' => $topic, 'id' => "{$prefix}ok-1", 'body' => ['order_id' => 1]]],
        ['/jobs:batch', ['jobs' => [
            ['topic' => $topic, 'id' => "{$prefix}ok-2", 'body' => ['order_id' => 2]],
            ['topic' => $topic, 'id' => "{$prefix}poison", 'body' => ['order_id' => 3, 'fail' => true],
             'max_attempts' => 3],
        ]]],
    ];
    foreach ($jobs as [$path, $body]) {
        [$status, $reply] = post($path, $body);
        if ($status >= 300) {
            fwrite(STDERR, "POST $path: HTTP $status " . json_encode($reply) . "\n");
            exit(1);
        }
        event(['route' => ltrim($path, '/'), 'status' => $status] + $reply);
    }
}

if (($argv[1] ?? '') === 'enqueue') {
    enqueue_demo($argv[2] ?? 'demo-');
    exit(0);
}

$stopping = false;
pcntl_async_signals(true);
foreach ([SIGINT, SIGTERM] as $signal) {
    pcntl_signal($signal, function () use (&$stopping): void { $stopping = true; });
}

$idle = 0;
while (!$stopping) {
    try {
        [$status, $reply] = post('/topics/' . rawurlencode($topic) . ':reserve',
            ['group' => $group, 'consumer' => $consumer, 'wait_ms' => $waitMs, 'count' => 10]);
    } catch (RuntimeException $error) { // server restarting, network: wait and poll again
        event(['event' => 'unreachable', 'error' => $error->getMessage()]);
        sleep(1);
        continue;
    }
    if ($status === 204) { // nothing came within wait_ms
        $idle++;
        if ($idleExit > 0 && $idle >= $idleExit) {
            break;
        }
        continue;
    }
    if ($status !== 200) {
        event(['event' => 'error', 'status' => $status, 'error' => $reply['error'] ?? null]);
        if ($status >= 400 && $status < 500) {
            exit(1); // a mistake in the request: retrying will not help
        }
        sleep(1);
        continue;
    }
    $idle = 0;
    foreach ($reply['deliveries'] as $delivery) {
        event(['event' => 'reserved', 'id' => $delivery['id'], 'attempt' => $delivery['attempt']]);
        try {
            handle($delivery);
        } catch (RuntimeException $error) { // unsettled: delivered again after its ttr
            event(['event' => 'error', 'id' => $delivery['id'], 'error' => $error->getMessage()]);
        }
    }
}
event(['event' => 'stopped', 'consumer' => $consumer]);
