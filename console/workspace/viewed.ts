/**
 * A file's "Viewed" mark, as a pull request keeps it: per person, per session, per path, and per
 * version of the change (a hash of its diff), so a file that changes again is unviewed again. Kept
 * in this browser's localStorage (it holds nothing secret: the credential stays in sessionStorage)
 * under one key, each mark itself a hash of principal, session, path and change, so no path or
 * name is written down in the clear; the newest 2000 marks are kept.
 */
const storeKey = "pi-gateway-console-viewed";
const keep = 2000;

/** FNV-1a, two 32-bit lanes: a short, stable hash without SubtleCrypto (absent on plain http off loopback). */
export function hash(text: string): string {
	let a = 0x811c9dc5;
	let b = 0x01000193 ^ text.length;
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		a = Math.imul(a ^ c, 0x01000193);
		b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
	}
	return (a >>> 0).toString(36) + (b >>> 0).toString(36);
}

export const viewedKey = (principal: string, sessionId: string, path: string, change: string) =>
	hash(JSON.stringify([principal, sessionId, path, hash(change)]));

function read(): Record<string, number> {
	try {
		const parsed = JSON.parse(localStorage.getItem(storeKey) ?? "{}") as unknown;
		return parsed && typeof parsed === "object" ? (parsed as Record<string, number>) : {};
	} catch {
		return {};
	}
}

export const isViewed = (key: string) => key in read();

export function setViewed(key: string, viewed: boolean): void {
	const marks = read();
	if (viewed) marks[key] = Date.now();
	else delete marks[key];
	const newest = Object.entries(marks)
		.sort((x, y) => y[1] - x[1])
		.slice(0, keep);
	try {
		localStorage.setItem(storeKey, JSON.stringify(Object.fromEntries(newest)));
	} catch {
		// Storage full or refused (a private window): the mark lasts as long as the page.
	}
}
