<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

use EventLogging\EventLogging;

/**
 * A GET over PHP streams within one deadline (the schema registry's
 * answers), for AvroSerializer.
 *
 * @internal
 */
final class Http
{
    /**
     * @return array{status: int, headers: array<string, string>, body: string}|array{error: string}
     */
    public static function get(string $url, float $timeout): array
    {
        $deadline = hrtime(true) + (int) ($timeout * 1e9);
        $u = parse_url($url);
        if (!is_array($u) || !isset($u['host']) || !in_array($u['scheme'] ?? '', ['http', 'https'], true)) {
            return ['error' => "bad URL $url"];
        }
        $tls = $u['scheme'] === 'https';
        $port = $u['port'] ?? ($tls ? 443 : 80);
        $host = $u['host'];
        $target = ($u['path'] ?? '/') . (isset($u['query']) ? '?' . $u['query'] : '');
        $ctx = stream_context_create(['ssl' => ['peer_name' => trim($host, '[]'), 'SNI_enabled' => true]]);
        $errno = 0;
        $errstr = '';
        $sock = @stream_socket_client(($tls ? 'tls' : 'tcp') . "://$host:$port", $errno, $errstr, $timeout, STREAM_CLIENT_CONNECT, $ctx);
        if ($sock === false) {
            return ['error' => "connecting to $host:$port: " . ($errstr !== '' ? $errstr : "error $errno")];
        }
        try {
            $hostHeader = $host . (isset($u['port']) ? ':' . $u['port'] : '');
            $auth = isset($u['user']) ? 'Authorization: Basic ' . base64_encode(rawurldecode($u['user']) . ':' . rawurldecode($u['pass'] ?? '')) . "\r\n" : '';
            $req = "GET $target HTTP/1.1\r\nHost: $hostHeader\r\nAccept: application/vnd.schemaregistry.v1+json, application/json\r\n{$auth}User-Agent: eventlogging-php-client/1\r\nConnection: close\r\n\r\n";
            stream_set_blocking($sock, false);
            while ($req !== '') {
                $n = @fwrite($sock, $req);
                if ($n === false) {
                    return ['error' => 'connection closed while sending the request'];
                }
                $req = substr($req, $n);
                if ($req !== '' && !self::wait($sock, false, $deadline)) {
                    return ['error' => sprintf('timeout after %.3fs sending the request', $timeout)];
                }
            }
            $raw = '';
            while (true) {
                $chunk = @fread($sock, 65536);
                if ($chunk === false) {
                    return ['error' => 'reading the answer failed'];
                }
                if ($chunk !== '') {
                    $raw .= $chunk;
                    continue;
                }
                if (feof($sock)) {
                    break;
                }
                if (!self::wait($sock, true, $deadline)) {
                    return ['error' => sprintf('timeout after %.3fs waiting for the answer', $timeout)];
                }
            }
            return EventLogging::parseResponse($raw);
        } finally {
            fclose($sock);
        }
    }

    /** @param resource $sock */
    private static function wait($sock, bool $read, int $deadline): bool
    {
        $t = ($deadline - hrtime(true)) / 1e9;
        $r = $read ? [$sock] : null;
        $w = $read ? null : [$sock];
        $e = null;
        return $t > 0 && @stream_select($r, $w, $e, (int) $t, (int) (fmod($t, 1.0) * 1e6)) > 0;
    }
}
