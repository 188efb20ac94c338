import { apiRoot, get, seg } from "../api/client.ts";
import type { Whoami } from "../api/types.ts";
import { storedCredential } from "../auth/credential.ts";

/**
 * A file of the session's folder as text, whatever its type: the API client parses a JSON file's
 * answer (by its Content-Type), and the review compares lines. Undefined when it cannot be read.
 */
export async function readText(sessionId: string, path: string): Promise<string | undefined> {
	const token = storedCredential();
	const res = await fetch(`${apiRoot}/v1/sessions/${seg(sessionId)}/files/content?path=${seg(path)}`, {
		headers: token ? { Authorization: `Bearer ${token}` } : {},
		credentials: "omit",
		cache: "no-store",
	}).catch(() => undefined);
	if (!res?.ok) return undefined;
	return res.text();
}

let me: { token?: string; name: Promise<string> } | undefined;
/** Who is signed in (the viewed marks are theirs), asked once per credential. */
export const principal = (): Promise<string> => {
	const token = storedCredential();
	if (!me || me.token !== token) {
		const asked = { token, name: get<Whoami>("/v1/whoami").then((w) => w.principal) };
		asked.name.catch(() => {
			if (me === asked) me = undefined;
		});
		me = asked;
		return asked.name;
	}
	return me.name;
};
