import { useEffect, useState } from "preact/hooks";
import { get, post } from "../api/client.ts";
import type { CreateSession as Body, Info, Session } from "../api/types.ts";

/** A new session: name, folder, model (`provider/id`) and extensions from the gateway's allow-list. */
export function CreateSession({ onCreated }: { onCreated: (s: Session) => void }) {
	const [extensions, setExtensions] = useState<string[]>([]);
	const [chosen, setChosen] = useState<Set<string>>(new Set());
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState<string>();
	useEffect(() => {
		get<Info>("/v1/info")
			.then((info) => setExtensions(info.extensions))
			.catch(() => {});
	}, []);
	const submit = async (form: HTMLFormElement) => {
		const data = new FormData(form);
		const text = (name: string) => String(data.get(name) ?? "").trim() || undefined;
		const body: Body = { name: text("name"), cwd: text("cwd") };
		const model = text("model");
		if (model) {
			const slash = model.indexOf("/");
			if (slash > 0) {
				body.provider = model.slice(0, slash);
				body.model = model.slice(slash + 1);
			} else body.model = model;
		}
		if (chosen.size > 0) body.extensions = [...chosen];
		setBusy(true);
		setError(undefined);
		try {
			onCreated(await post<Session>("/v1/sessions", body));
		} catch (e) {
			setError((e as Error).message);
		} finally {
			setBusy(false);
		}
	};
	return (
		<details class="card create">
			<summary>New session</summary>
			<form
				onSubmit={(e) => {
					e.preventDefault();
					void submit(e.currentTarget);
				}}
			>
				<label for="new-name">Name</label>
				<input id="new-name" name="name" maxLength={200} />
				<label for="new-cwd">Working folder</label>
				<input id="new-cwd" name="cwd" placeholder="default: a folder of its own" />
				<label for="new-model">Model</label>
				<input id="new-model" name="model" placeholder="provider/model, default: the gateway's" />
				{extensions.length > 0 && (
					<fieldset>
						<legend>Extensions</legend>
						{extensions.map((name) => (
							<label class="check" key={name}>
								<input
									type="checkbox"
									checked={chosen.has(name)}
									onChange={(e) => {
										const next = new Set(chosen);
										if (e.currentTarget.checked) next.add(name);
										else next.delete(name);
										setChosen(next);
									}}
								/>
								{name}
							</label>
						))}
					</fieldset>
				)}
				<button type="submit" disabled={busy}>
					Create session
				</button>
				{error && (
					<p role="alert" class="error">
						{error}
					</p>
				)}
			</form>
		</details>
	);
}
