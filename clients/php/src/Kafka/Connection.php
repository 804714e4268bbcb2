<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * One connection to one broker: TCP (and TLS), ApiVersions, SASL, then
 * framed requests and responses. Every wait is bounded by the caller's
 * deadline (hrtime nanoseconds): the socket is non-blocking and each read,
 * write and TLS handshake step waits in stream_select for what is left.
 *
 * @internal
 */
final class Connection
{
    public const PRODUCE = 0;
    public const METADATA = 3;
    public const SASL_HANDSHAKE = 17;
    public const API_VERSIONS = 18;
    public const SASL_AUTHENTICATE = 36;

    /** @var resource */
    private $sock;

    private string $rbuf = '';

    private int $correlation = 0;

    /** @var array<int, array{0: int, 1: int}> api key => [min, max] version */
    public array $versions = [];

    /** Whether ApiVersions was asked on this connection (false: versions from the cache). */
    public bool $askedVersions = false;

    /** @param resource $sock */
    private function __construct($sock, public readonly string $addr, private string $clientId)
    {
        $this->sock = $sock;
    }

    /**
     * Connects to $addr ("host:port") and makes the connection ready for
     * requests: TLS when $opts['tls'], ApiVersions unless $versions is
     * given (known from an earlier connection), SASL when $opts['sasl'].
     *
     * @param array{connectTimeout: float, tls: mixed, sasl: mixed, clientId: string} $opts
     * @param array<int, array{0: int, 1: int}>|null $versions
     */
    public static function open(string $addr, array $opts, int $deadline, ?array $versions = null): self
    {
        $p = strrpos($addr, ':');
        if ($p === false) {
            throw new KafkaException("broker address $addr: want host:port");
        }
        $host = substr($addr, 0, $p);
        $port = (int) substr($addr, $p + 1);
        $left = self::left($deadline);
        if ($left <= 0) {
            throw new KafkaException("timeout before connecting to $addr");
        }
        $tls = $opts['tls'];
        $ctx = stream_context_create(['ssl' => self::sslOptions($tls, trim($host, '[]'))]);
        $errno = 0;
        $errstr = '';
        $sock = @stream_socket_client("tcp://$host:$port", $errno, $errstr, min((float) $opts['connectTimeout'], $left), STREAM_CLIENT_CONNECT, $ctx);
        if ($sock === false) {
            // Never sent: safe to try another broker.
            throw new KafkaException("connecting to $addr: " . ($errstr !== '' ? $errstr : "error $errno"), -1, true);
        }
        stream_set_blocking($sock, false);
        if (function_exists('socket_import_stream') && defined('TCP_NODELAY')) {
            $s = @socket_import_stream($sock);
            if ($s !== false && $s !== null) {
                @socket_set_option($s, SOL_TCP, TCP_NODELAY, 1);
            }
        }
        $c = new self($sock, $addr, $opts['clientId']);
        try {
            if ($tls !== false && $tls !== null) {
                $c->handshakeTLS($deadline);
            }
            if ($versions === null) {
                $c->apiVersions($deadline);
            } else {
                $c->versions = $versions;
            }
            if (is_array($opts['sasl'])) {
                $c->authenticate($opts['sasl'], $deadline);
            }
        } catch (\Throwable $e) {
            $c->close();
            throw $e;
        }
        return $c;
    }

    /**
     * The highest version of $api both sides speak, within $min .. $max.
     */
    public function version(int $api, int $min, int $max): int
    {
        [$bmin, $bmax] = $this->versions[$api] ?? [-1, -1];
        $v = min($max, $bmax);
        if ($bmax < 0 || $v < max($min, $bmin)) {
            throw new KafkaException(sprintf('broker %s speaks API %d versions %d-%d; this client %d-%d', $this->addr, $api, $bmin, $bmax, $min, $max), 35);
        }
        return $v;
    }

    /** Sends one request and reads its response. */
    public function request(int $api, int $version, string $body, int $deadline): Reader
    {
        return $this->read($this->write($api, $version, $body, $deadline), $deadline);
    }

    /**
     * Writes one request (header v1) and returns its correlation id. A
     * failure here means the broker did not get the whole request.
     */
    public function write(int $api, int $version, string $body, int $deadline): int
    {
        $corr = ++$this->correlation;
        $msg = Wire::int16($api) . Wire::int16($version) . Wire::int32($corr) . Wire::string($this->clientId) . $body;
        $data = Wire::int32(strlen($msg)) . $msg;
        while ($data !== '') {
            $n = @fwrite($this->sock, $data);
            if ($n === false) {
                throw new KafkaException("writing to {$this->addr}: connection closed", -1, true);
            }
            if ($n > 0) {
                $data = substr($data, $n);
                continue;
            }
            $this->wait(false, $deadline, 'sending a request to');
        }
        return $corr;
    }

    /**
     * Reads the response to request $corr. A failure here leaves it unknown
     * whether the broker carried out the request.
     */
    public function read(int $corr, int $deadline): Reader
    {
        $frame = $this->readFrame($deadline);
        $r = new Reader($frame);
        $got = $r->int32();
        if ($got !== $corr) {
            throw new KafkaException("{$this->addr} answered request $got, expected $corr");
        }
        return $r;
    }

    public function close(): void
    {
        if (is_resource($this->sock)) {
            @fclose($this->sock);
        }
    }

    // ---- internals ----

    private function readFrame(int $deadline): string
    {
        $need = 4;
        $size = -1;
        while (true) {
            if (strlen($this->rbuf) >= $need) {
                if ($size < 0) {
                    $size = unpack('N', $this->rbuf)[1];
                    if ($size > 0x7fffffff - 4) {
                        throw new KafkaException("{$this->addr} sent a frame of $size bytes");
                    }
                    $need = 4 + $size;
                    continue;
                }
                $frame = substr($this->rbuf, 4, $size);
                $this->rbuf = (string) substr($this->rbuf, $need);
                return $frame;
            }
            // Read first: TLS streams may hold decrypted bytes select does not see.
            $chunk = @fread($this->sock, max(65536, $need - strlen($this->rbuf)));
            if ($chunk === false) {
                throw new KafkaException("reading from {$this->addr}: connection broken", -1, true);
            }
            if ($chunk !== '') {
                $this->rbuf .= $chunk;
                continue;
            }
            if (feof($this->sock)) {
                throw new KafkaException("{$this->addr} closed the connection", -1, true);
            }
            $this->wait(true, $deadline, 'waiting for an answer from');
        }
    }

    /** Waits until the socket is readable (or writable), or throws at the deadline. */
    private function wait(bool $read, int $deadline, string $doing): void
    {
        $t = self::left($deadline);
        $r = $read ? [$this->sock] : null;
        $w = $read ? null : [$this->sock];
        $e = null;
        if ($t <= 0 || @stream_select($r, $w, $e, (int) $t, (int) (fmod($t, 1.0) * 1e6)) < 1) {
            throw new KafkaException("timeout $doing {$this->addr}");
        }
    }

    private function handshakeTLS(int $deadline): void
    {
        $methods = STREAM_CRYPTO_METHOD_TLSv1_2_CLIENT | (defined('STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT') ? STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT : 0);
        while (true) {
            error_clear_last();
            $ok = @stream_socket_enable_crypto($this->sock, true, $methods);
            if ($ok === true) {
                return;
            }
            if ($ok === false) {
                $why = error_get_last()['message'] ?? 'handshake failed';
                throw new KafkaException("TLS with {$this->addr}: " . preg_replace('/^stream_socket_enable_crypto\(\): /', '', $why));
            }
            $this->wait(true, $deadline, 'in the TLS handshake with');
        }
    }

    private function apiVersions(int $deadline): void
    {
        $r = $this->request(self::API_VERSIONS, 0, '', $deadline);
        $err = $r->int16();
        $versions = [];
        for ($n = $r->arrayLength(); $n > 0; $n--) {
            $key = $r->int16();
            $versions[$key] = [$r->int16(), $r->int16()];
        }
        if ($err !== 0) {
            throw new KafkaException("{$this->addr}: ApiVersions: " . Errors::name($err), $err);
        }
        $this->versions = $versions;
        $this->askedVersions = true;
    }

    /**
     * SaslHandshake v1, then SaslAuthenticate exchanges for PLAIN or SCRAM.
     *
     * @param array<string, mixed> $sasl
     */
    private function authenticate(array $sasl, int $deadline): void
    {
        $mech = strtoupper((string) ($sasl['mechanism'] ?? 'PLAIN'));
        $user = (string) ($sasl['username'] ?? '');
        $pass = (string) ($sasl['password'] ?? '');
        $r = $this->request(self::SASL_HANDSHAKE, $this->version(self::SASL_HANDSHAKE, 1, 1), Wire::string($mech), $deadline);
        $err = $r->int16();
        $offered = [];
        for ($n = $r->arrayLength(); $n > 0; $n--) {
            $offered[] = $r->string();
        }
        if ($err !== 0) {
            throw new KafkaException("{$this->addr}: SASL mechanism $mech refused (" . Errors::name($err) . '); the broker offers ' . implode(', ', $offered), $err);
        }
        $authVersion = $this->version(self::SASL_AUTHENTICATE, 0, 1);
        $exchange = function (string $bytes) use ($authVersion, $deadline, $mech): string {
            try {
                $r = $this->request(self::SASL_AUTHENTICATE, $authVersion, Wire::bytes($bytes), $deadline);
            } catch (KafkaException $e) {
                // Some brokers (and Kafka with SaslAuthenticate v0) close the
                // connection on refused credentials instead of answering.
                throw new KafkaException("{$this->addr}: SASL authentication failed ($mech): " . $e->getMessage(), $e->kafkaCode, false, $e);
            }
            $err = $r->int16();
            $msg = $r->nullableString();
            $out = $r->bytes() ?? '';
            if ($err !== 0) {
                throw new KafkaException("{$this->addr}: SASL authentication failed: " . ($msg ?? Errors::name($err)), $err);
            }
            return $out;
        };
        if ($mech === 'PLAIN') {
            $exchange("\0$user\0$pass");
            return;
        }
        $scram = new Scram($mech, $user, $pass);
        $serverFirst = $exchange($scram->first());
        $serverFinal = $exchange($scram->final($serverFirst));
        $scram->verify($serverFinal);
    }

    /**
     * PHP's ssl context options for the 'tls' option: true, or an array
     * with cafile, capath, peer_name, cert (client certificate file), key
     * (its private key file), passphrase, verify (default true).
     *
     * @return array<string, mixed>
     */
    private static function sslOptions(mixed $tls, string $host): array
    {
        if ($tls === false || $tls === null) {
            return [];
        }
        $t = is_array($tls) ? $tls : [];
        $verify = (bool) ($t['verify'] ?? true);
        $o = [
            'verify_peer' => $verify,
            'verify_peer_name' => $verify,
            'peer_name' => (string) ($t['peer_name'] ?? $host),
            'SNI_enabled' => true,
            'allow_self_signed' => false,
        ];
        foreach (['cafile' => 'cafile', 'capath' => 'capath', 'cert' => 'local_cert', 'local_cert' => 'local_cert',
            'key' => 'local_pk', 'local_pk' => 'local_pk', 'passphrase' => 'passphrase'] as $from => $to) {
            if (isset($t[$from])) {
                $o[$to] = (string) $t[$from];
            }
        }
        return $o;
    }

    /** Seconds left until $deadline (hrtime nanoseconds). */
    public static function left(int $deadline): float
    {
        return ($deadline - hrtime(true)) / 1e9;
    }
}
