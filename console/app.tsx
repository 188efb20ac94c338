import { useCallback, useEffect, useState } from "preact/hooks";
import { get, useCredential } from "./api/client.ts";
import type { Whoami } from "./api/types.ts";
import { Inbox } from "./approvals/inbox.tsx";
import { usePendingApprovals } from "./approvals/pending.ts";
import { forgetCredential, storeCredential, storedCredential } from "./auth/credential.ts";
import { can } from "./auth/scopes.ts";
import { SignIn } from "./auth/signin.tsx";
import { useRoute } from "./router.ts";
import { SessionView } from "./session/view.tsx";
import { SessionsScreen } from "./sessions/list.tsx";

export function App() {
	const [token, setToken] = useState(storedCredential);
	const [me, setMe] = useState<Whoami>();
	const [error, setError] = useState<string>();
	const signOut = useCallback((why?: string) => {
		forgetCredential();
		useCredential(undefined);
		setMe(undefined);
		setToken(undefined);
		setError(why);
	}, []);
	useEffect(() => {
		if (!token) return;
		useCredential({ token, onUnauthorized: () => signOut("The gateway no longer accepts this credential.") });
		get<Whoami>("/v1/whoami")
			.then((who) => {
				storeCredential(token);
				setMe(who);
			})
			.catch((e: Error) => signOut(e.message));
	}, [token, signOut]);

	if (!token || !me) return <SignIn busy={token !== undefined} error={error} onToken={setToken} />;
	return <Console me={me} onSignOut={() => signOut()} />;
}

function Console({ me, onSignOut }: { me: Whoami; onSignOut: () => void }) {
	const route = useRoute();
	const pending = usePendingApprovals(can(me, "approvals:read"));
	return (
		<>
			<header class="top">
				<nav aria-label="Console">
					<a href="#/" aria-current={route.screen === "sessions" ? "page" : undefined}>
						Sessions
					</a>
					{can(me, "approvals:read") && (
						<a href="#/approvals" aria-current={route.screen === "approvals" ? "page" : undefined}>
							Approvals{" "}
							{pending.approvals.length > 0 && (
								<span class="badge warn">
									{pending.approvals.length}
									<span class="sr"> pending</span>
								</span>
							)}
						</a>
					)}
				</nav>
				<span class="who">
					<span class="sr">Signed in as </span>
					{me.principal}
				</span>
				<button type="button" onClick={onSignOut}>
					Sign out
				</button>
			</header>
			<main>
				{route.screen === "approvals" && <Inbox me={me} pending={pending} />}
				{route.screen === "sessions" && <SessionsScreen me={me} />}
				{route.screen === "session" && <SessionView key={route.id} id={route.id} me={me} pending={pending} />}
			</main>
		</>
	);
}
