import type { Config } from "../config/config.ts";
import type { KeyStore } from "../http/auth/keys.ts";
import { areaOf } from "../sessions/process/index.ts";
import type { SessionAccess, SessionRegistry } from "../sessions/registry/index.ts";

/**
 * A principal given its first key while the gateway runs (`pi-gateway keys create`) gets one pi
 * ready in its area before its first create, as one that created already has (warm-pool.ts
 * WarmPools.warm, within the same `--warm-pool` principals who came last). A pooled pi is bound to
 * its area at start (the folder bwrap binds, the area's agent folder, compile cache and keys), so
 * none can wait for a principal not known yet; a key is the first sign one is coming. Principals
 * whose keys were there at start: see warmRecentPrincipals. Only principals that may create
 * (sessions:write, not admin: an admin's creates take the operator's pool).
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

/**
 * At start, the principals whose sessions are the newest (as many as the pool keeps principals'
 * pools, `--warm-pool`) get one pi ready in their area, as they had before the restart: without
 * it a principal whose key was there at start waited for a cold pi at its first create after
 * every restart. Who came last is read from the sessions the store gave back (their owners and
 * creation times); a principal whose key is gone or may not create gets none.
 */
export function warmRecentPrincipals(
	config: Config,
	keys: KeyStore | undefined,
	registry: SessionRegistry,
	access: SessionAccess,
): void {
	const pool = registry.pool;
	if (!keys || !pool || config.warmPool === 0) return;
	const principals = keys.principals();
	const recent: string[] = [];
	const newestFirst = registry.list().sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
	for (const session of newestFirst) {
		const owner = access.get(session.id).owner;
		const scopes = principals.get(owner);
		if (!scopes || scopes.has("admin") || !scopes.has("sessions:write") || recent.includes(owner)) continue;
		recent.push(owner);
		if (recent.length >= config.warmPool) break;
	}
	// The newest last: the pools keep the last used, so it is the one kept longest.
	for (const name of recent.reverse()) pool.warm(areaOf(config, name, false));
}
