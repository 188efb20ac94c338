import type { Config } from "../../config/config.ts";
import { ownKeysOf } from "../../config/own-keys.ts";
import { GatewayError } from "../../shared/errors.ts";
import { isInside } from "../../shared/paths.ts";
import { areaOf } from "./areas.ts";

/**
 * Whose own provider keys (issue 42 item 5, config/own-keys.ts) a session's relay uses: its owner's
 * (the creator at create, `owner` at a later start), when the session works in that principal's own
 * area, `<root>/@<name>`, which every session of a principal without the admin scope does. An
 * admin's session working in the whole root, or one an admin started in another's area, uses the
 * operator's keys: a key is used only in sessions its principal owns.
 *
 * Unsandboxed, pi calls its provider itself with the operator's keys (there is no relay): a session
 * of a principal with keys of its own is refused then, rather than run on the operator's.
 */
export function keyOwner(
	config: Config,
	at: { area?: { principal: string }; owner?: string },
	cwd: string,
	confined: boolean,
): string | undefined {
	const owner = at.owner ?? at.area?.principal;
	if (owner === undefined || !isInside(areaOf(config, owner, false).path, cwd)) return undefined;
	if (!confined && ownKeysOf(config.keysFile, owner).size > 0)
		throw new GatewayError(
			503,
			"provider_keys_need_sandbox",
			`${owner} has provider keys of its own, which only the sandbox's relay can use; with the sandbox off the gateway starts no session of ${owner}'s rather than run it on the operator's keys`,
		);
	return owner;
}
