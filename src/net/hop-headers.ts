/**
 * Headers that belong to one connection, not to the request or answer it carries (RFC 9110
 * §7.6.1): whatever passes a request on (the cluster's forwarding, the model relay) drops them
 * and lets its own connection write its own.
 */
export const hopByHopHeaders: readonly string[] = [
	"connection",
	"keep-alive",
	"proxy-connection",
	"proxy-authenticate",
	"proxy-authorization",
	"te",
	"trailer",
	"transfer-encoding",
	"upgrade",
];
