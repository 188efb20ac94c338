export interface WaitRequest {
	/** How long to wait for the run to end, within the gateway's limit. */
	ms: number;
	/** The `Preference-Applied` value to send with the 200 (only when the Prefer header asked). */
	applied?: string;
}

/**
 * RFC 7240 preferences: comma-separated `name[=value]` with optional `;param`s; names are
 * case-insensitive, values may be quoted, and only the first instance of a name counts.
 */
export function parsePrefer(header: string | undefined): Map<string, string> {
	const prefs = new Map<string, string>();
	for (const part of header?.split(",") ?? []) {
		const [pref = ""] = part.split(";");
		const eq = pref.indexOf("=");
		const name = (eq === -1 ? pref : pref.slice(0, eq)).trim().toLowerCase();
		const value =
			eq === -1
				? ""
				: pref
						.slice(eq + 1)
						.trim()
						.replace(/^"(.*)"$/, "$1");
		if (name && !prefs.has(name)) prefs.set(name, value);
	}
	return prefs;
}

/**
 * Wait mode from `Prefer: wait=N` (seconds) or a bare `Prefer: wait` (as long as the gateway
 * allows), else `?wait=true|N`; undefined when not asked for. A malformed `wait` preference is
 * ignored, as RFC 7240 asks of preferences a server cannot apply.
 */
export function requestedWait(
	prefer: string | undefined,
	query: string | undefined,
	maxMs: number,
): WaitRequest | undefined {
	const fromHeader = parsePrefer(prefer).get("wait");
	if (fromHeader === "") return { ms: maxMs, applied: "wait" };
	if (fromHeader !== undefined && /^\d+$/.test(fromHeader)) {
		return { ms: Math.min(Number(fromHeader) * 1000, maxMs), applied: `wait=${fromHeader}` };
	}
	if (query === undefined || query === "false") return undefined;
	if (query === "true") return { ms: maxMs };
	return /^\d+$/.test(query) ? { ms: Math.min(Number(query) * 1000, maxMs) } : undefined;
}
