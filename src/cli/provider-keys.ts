import { ownKeyProblem, ProviderKeys } from "../config/own-keys.ts";
import { readWholeKeysFile, setProviderKey } from "../http/auth/keys.ts";

/**
 * `pi-gateway keys`' part for principals' own provider keys (issue 42 item 5): `--provider-key
 * PROVIDER=SOURCE` on create, `keys provider-key PRINCIPAL PROVIDER=SOURCE` to set one
 * (`PROVIDER=` removes it), and what `keys list` says of each. A source says where the key is,
 * `env:NAME` or `file:/absolute/path`: the keys file never holds the key itself.
 */
export const providerKeyUsage = [
	"       pi-gateway keys provider-key PRINCIPAL PROVIDER=SOURCE [PROVIDER=SOURCE ...]",
	"",
	"  provider-key  gives a principal its own provider key, used by the gateway's relay for that",
	"                principal's sessions only (create takes it too: --provider-key PROVIDER=SOURCE).",
	"                SOURCE is where the key is, never the key: env:NAME (a variable of the gateway's",
	"                environment) or file:/absolute/path (a file the gateway reads); PROVIDER= removes it.",
	"                A key that is missing when a call is made fails that call: the operator's is not used.",
];

/** `openai=env:ALICE_OPENAI_KEY` → [provider, source] (source undefined: remove), or why not. */
export function parseProviderKey(text: string): [string, string | undefined] {
	const at = text.indexOf("=");
	if (at <= 0)
		throw new Error(`--provider-key ${JSON.stringify(text)}: PROVIDER=SOURCE (e.g. openai=env:ALICE_OPENAI_KEY)`);
	const provider = text.slice(0, at);
	const source = text.slice(at + 1);
	const checked = ProviderKeys.safeParse({ p: { [provider]: source || "env:X" } });
	if (!checked.success) {
		const issues = checked.error.issues.map((i) => i.message).join("; ");
		throw new Error(`--provider-key ${JSON.stringify(`${provider}=…`)}: ${issues}`);
	}
	return [provider, source || undefined];
}

/** Sets each of `entries` for `principal` and says what the gateway will find there now. */
export function setProviderKeys(file: string, principal: string, entries: string[]): void {
	const parsed = entries.map(parseProviderKey);
	for (const [provider, source] of parsed) {
		setProviderKey(file, principal, provider, source);
		if (source === undefined) {
			console.error(
				`pi-gateway: ${principal}'s own key for ${provider} removed; the operator's is used from its next session`,
			);
			continue;
		}
		const problem = ownKeyProblem(source);
		console.error(
			`pi-gateway: ${principal}'s sessions call ${provider} with the key at ${source} from their next start` +
				(problem
					? `; WARNING, as this command sees it: ${problem} (their calls to ${provider} fail until it is fixed)`
					: ""),
		);
	}
}

/** The own keys of the file, one line each with what is wrong (as this command's environment sees it). */
export function listProviderKeys(file: string, json: boolean): unknown {
	const keys = readWholeKeysFile(file).providerKeys ?? {};
	const rows = Object.entries(keys).flatMap(([principal, providers]) =>
		Object.entries(providers).map(([provider, source]) => ({
			principal,
			provider,
			source,
			problem: ownKeyProblem(source),
		})),
	);
	if (json) return rows;
	for (const row of rows)
		console.log(
			`provider key  ${row.principal}  ${row.provider}  ${row.source}  ${row.problem ? `PROBLEM: ${row.problem}` : "ok"}`,
		);
	return rows;
}
