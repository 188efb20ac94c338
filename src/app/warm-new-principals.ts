import type { Config } from "../config/config.ts";
import type { KeyStore } from "../http/auth/keys.ts";
import { areaOf } from "../sessions/process/index.ts";
import type { SessionRegistry } from "../sessions/registry/index.ts";

/**
 * A principal given its first key while the gateway runs (`pi-gateway keys create`) gets one pi
 * ready in its area before its first create, as one that created already has (warm-pool.ts
 * WarmPools.warm, within the same `--warm-pool` principals who came last). A pooled pi is bound to
 * its area at start (the folder bwrap binds, the area's agent folder, compile cache and keys), so
 * none can wait for a principal not known yet; a key is the first sign one is coming. Principals
 * whose keys were there at start get theirs at their first create, as before. Only principals
 * that may create (sessions:write, not admin: an admin's creates take the operator's pool).
 */
export function warmNewPrincipals(config: Config, keys: KeyStore | undefined, registry: SessionRegistry): void {
	if (!keys || !registry.pool) return;
	let known = new Set(keys.principals().keys());
	keys.onReload(() => {
		const now = keys.principals();
		for (const [name, scopes] of now)
			if (!known.has(name) && !scopes.has("admin") && scopes.has("sessions:write"))
				registry.pool?.warm(areaOf(config, name, false));
		known = new Set(now.keys());
	});
}
