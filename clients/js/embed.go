// Package jsclient holds the browser client, clients/js/eventlogging.js, for
// the intake to serve at /static/eventlogging.js. The JavaScript is the
// source; this Go file only embeds it.
package jsclient

import _ "embed" // the browser client

// Module is eventlogging.js, the dependency-free ES module.
//
//go:embed eventlogging.js
var Module []byte
