import { useState } from "preact/hooks";

/** The credential is typed here, kept for this tab only (sessionStorage), sent as a bearer header. */
export function SignIn(props: { busy: boolean; error?: string; onToken: (token: string) => void }) {
	const [value, setValue] = useState("");
	return (
		<main class="signin">
			<h1>pi-gateway console</h1>
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
					required
				/>
				<button type="submit" disabled={props.busy}>
					Sign in
				</button>
				{props.error && (
					<p role="alert" class="error">
						{props.error}
					</p>
				)}
				<p class="hint">Kept in this tab only, and sent to this gateway only.</p>
			</form>
		</main>
	);
}
