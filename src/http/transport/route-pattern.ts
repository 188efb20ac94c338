/**
 * A path template of the API document (`/v1/sessions/{id}/prompt`) as the RegExp that matches its
 * paths: each `{param}` one segment. Only the gateway's own route templates come here, never a
 * client's or an operator's text (test/unit/policy-patterns.test.ts holds src to that).
 */
export function routePattern(template: string): RegExp {
	const pattern = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
	return new RegExp(`^${pattern}$`);
}
