import { z } from "@hono/zod-openapi";
import type { Config } from "../../config/config.ts";
import { beyondOperator } from "../../net/egress-allow.ts";
import { GatewayError } from "../../shared/errors.ts";

/** The create body's `sandboxAllowHosts`: a session's narrower egress list (docs/security.md). */
export const SessionAllowHosts = z
	.array(z.string().min(1).max(300))
	.max(100)
	.openapi({
		description:
			"The hosts this session's tools may reach through the egress proxy, within the operator's --sandbox-allow-hosts (same forms: host, *.suffix, address, each with an optional :port, or `registries`); each entry must lie within one of the operator's (403 egress_not_allowed), a malformed one is 400 egress_entry_invalid. `[]`: no network at all. Left out: the operator's list. Sandboxed sessions only",
		example: ["pypi.org:443", "files.pythonhosted.org:443"],
	});

/** The list a session's egress proxy enforces: the operator's, or the session's own when it narrows it. */
export function sessionAllowHosts(config: Pick<Config, "sandboxAllowHosts">, own: string[] | undefined): string[] {
	if (own === undefined) return config.sandboxAllowHosts;
	let beyond: string[];
	try {
		beyond = beyondOperator(config.sandboxAllowHosts, own);
	} catch (error) {
		throw new GatewayError(
			400,
			"egress_entry_invalid",
			`sandboxAllowHosts: ${(error as Error).message.replace(/^--sandbox-allow-hosts: /, "")}`,
		);
	}
	if (beyond.length > 0)
		throw new GatewayError(
			403,
			"egress_not_allowed",
			`sandboxAllowHosts: ${beyond.join(", ")} ${beyond.length === 1 ? "is" : "are"} not within the operator's --sandbox-allow-hosts; a session may only narrow it`,
		);
	return own;
}
