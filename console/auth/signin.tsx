import { useState } from "preact/hooks";
import { storedCredential } from "./credential.ts";

/** The credential is typed here, kept for this tab only (sessionStorage), sent as a bearer header. */
export function SignIn(props: { busy: boolean; error?: string; onToken: (token: string) => void }) {
	const [value, setValue] = useState(storedCredential() ?? "");
	return (
		<main class="signin">
			<h1>
				pi<span class="dim">-gateway</span>
			</h1>
			<p class="lead">Sign in to follow your agents' sessions and answer what they ask.</p>
			<form
				onSubmit={(e) => {
					e.preventDefault();
					if (value.trim()) props.onToken(value.trim());
				}}
			>
				<label for="credential">Token or API key</label>
				<input
					id="credential"
					type="password"
					autocomplete="current-password"
					value={value}
					onInput={(e) => setValue(e.currentTarget.value)}
					aria-describedby="credential-help"
					required
				/>
				<p class="hint" id="credential-help">
					The gateway's token is in the file it printed at start, by default <code>~/.pi-gateway/token</code> (or the{" "}
					<code>PI_GATEWAY_TOKEN</code> it was started with). An API key works too: <code>pi-gateway keys create</code>{" "}
					makes one, and the console shows only what its scopes allow.
				</p>
				<button type="submit" class="primary" disabled={props.busy}>
					Sign in
				</button>
				{props.error && (
					<p role="alert" class="error">
						{props.error}
					</p>
				)}
				<p class="hint">Kept in this tab only (never a cookie or a URL), and sent to this gateway only.</p>
			</form>
		</main>
	);
}
