package registry

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Error codes of the API, Confluent's where Confluent has one. The HTTP
// status is derived from the code in one place, [apiError.status].
const (
	codeBadRequest            = 400
	codeNotFound              = 404
	codeMethodNotAllowed      = 405
	codeIncompatible          = 409
	codeUnsupportedMediaType  = 415
	codeUnprocessable         = 422
	codeForbidden             = 40301
	codeSubjectNotFound       = 40401
	codeVersionNotFound       = 40402
	codeSchemaNotFound        = 40403
	codeSubjectSoftDeleted    = 40404
	codeSubjectNotSoftDeleted = 40405
	codeVersionSoftDeleted    = 40406
	codeVersionNotSoftDeleted = 40407
	codeSubjectLevelNotSet    = 40408
	codeSubjectModeNotSet     = 40409
	codeBodyTooLarge          = 41301 // Confluent has none: its limit is the broker's
	codeMisdirected           = 42101 // Confluent has none: a Host not in security.allowed_hosts
	codeInvalidSchema         = 42201
	codeInvalidVersion        = 42202
	codeInvalidLevel          = 42203
	codeInvalidMode           = 42204
	codeNotPermitted          = 42205
	codeReferenceExists       = 42206
	codeInvalidSubject        = 42208
	codeStore                 = 50001
	codeTimeout               = 50002
	codeForwarding            = 50003
	codeUnknownLeader         = 50004
	codeBusy                  = 50301 // Confluent has none: no compile slot (registry.max_concurrent_compiles)
)

// apiError is an error the API answers with: {"error_code", "message"}.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (error code %d)", e.Message, e.Code) }

// status is the HTTP status of an error code: the code itself for
// three-digit codes, its first three digits for Confluent's five-digit
// codes (40401 → 404, 42201 → 422, 50001 → 500).
func (e *apiError) status() int {
	c := e.Code
	for c >= 1000 {
		c /= 10
	}
	if c < 400 || c > 599 {
		return http.StatusInternalServerError
	}
	return c
}

func apiErrorf(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errSubjectNotFound(subject string) *apiError {
	return apiErrorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
}

func errVersionNotFound(version int) *apiError {
	return apiErrorf(codeVersionNotFound, "Version %d not found.", version)
}

func errSchemaIDNotFound(id string) *apiError {
	return apiErrorf(codeSchemaNotFound, "Schema %s not found", id)
}

func errInvalidSchema(format string, args ...any) *apiError {
	return apiErrorf(codeInvalidSchema, "Invalid schema: "+format, args...)
}

func errInvalidVersion(v string) *apiError {
	return apiErrorf(codeInvalidVersion, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
}

func errReadOnly(subject string) *apiError {
	if subject == "" {
		return apiErrorf(codeNotPermitted, "The registry is in read-only mode")
	}
	return apiErrorf(codeNotPermitted, "Subject %s is in read-only mode", subject)
}

// Compatibility levels and modes.
var (
	levels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}
	modes  = []string{modeReadWrite, modeReadOnly, modeImport}
)

const (
	levelNone     = "NONE"
	modeReadWrite = "READWRITE"
	modeReadOnly  = "READONLY"
	modeImport    = "IMPORT"
)

// parseLevel returns the canonical (upper-case) form of a compatibility
// level, case-insensitively.
func parseLevel(s string) (string, bool) { return parseName(s, levels) }

// parseMode returns the canonical (upper-case) form of a mode,
// case-insensitively.
func parseMode(s string) (string, bool) { return parseName(s, modes) }

// parseName returns the member of names (all upper case) that s is, case
// and surrounding white space aside.
func parseName(s string, names []string) (string, bool) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if i := slices.Index(names, u); i >= 0 {
		return names[i], true
	}
	return "", false
}

func transitive(level string) bool { return strings.HasSuffix(level, "_TRANSITIVE") }

func errInvalidLevel(s string) *apiError {
	return apiErrorf(codeInvalidLevel, "Invalid compatibility level %q. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive", s)
}

func errInvalidMode(s string) *apiError {
	return apiErrorf(codeInvalidMode, "Invalid mode %q. Valid values are READWRITE, READONLY and IMPORT", s)
}
