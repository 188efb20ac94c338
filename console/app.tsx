import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError, get, useCredential } from "./api/client.ts";
import { useReach } from "./api/health.ts";
import type { Whoami } from "./api/types.ts";
import { Inbox } from "./approvals/inbox.tsx";
import { usePending } from "./approvals/pending.ts";
import { forgetCredential, storeCredential, storedCredential } from "./auth/credential.ts";
import { can } from "./auth/scopes.ts";
import { SignIn } from "./auth/signin.tsx";
import { sessionHref, useRoute, useWide } from "./router.ts";
import { SandboxBanner } from "./sandbox.tsx";
import { SessionView } from "./session/view.tsx";
import { CreateSession } from "./sessions/create.tsx";
import { SessionsList, useSessions } from "./sessions/list.tsx";
import { ReachBanner } from "./status-banner.tsx";

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
			.catch((e: Error) => {
				// A gateway that does not answer has not refused the credential: keep it for the next try.
				if (e instanceof ApiError && e.code === "unreachable") {
					setToken(undefined);
					setError(`${e.message} Start it (npm start), then sign in again.`);
				} else signOut(e.message);
			});
	}, [token, signOut]);

	if (!token || !me) return <SignIn busy={token !== undefined} error={error} onToken={setToken} />;
	return <Console me={me} onSignOut={() => signOut()} />;
}

function Console({ me, onSignOut }: { me: Whoami; onSignOut: () => void }) {
	const route = useRoute();
	const wide = useWide();
	const pending = usePending(can(me, "approvals:read"), can(me, "sessions:read"));
	const reach = useReach();
	const sessions = useSessions(me);
	const mayList = can(me, "sessions:read");
	const current = route.screen === "session" ? route.id : undefined;
	// A desktop shows the sessions beside the open screen; a phone one screen at a time, the list first.
	const listOnly = mayList && !wide && route.screen === "sessions";
	const names = new Map((sessions.sessions ?? []).map((s) => [s.id, s.name ?? s.id]));
	const list = mayList && <SessionsList me={me} state={sessions} current={current} page={listOnly} />;
	return (
		<>
			<header class="top">
				<a class="brand" href="#/">
					pi<span class="dim">-gateway</span>
				</a>
				<nav aria-label="Console">
					{mayList && (
						<a href="#/" aria-current={route.screen === "sessions" ? "page" : undefined}>
							Sessions
						</a>
					)}
					{can(me, "approvals:read") && (
						<a href="#/approvals" aria-current={route.screen === "approvals" ? "page" : undefined}>
							Approvals{" "}
							{pending.count > 0 && (
								<span class="badge warn solid">
									{pending.count}
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
				<button type="button" class="small" onClick={onSignOut}>
					Sign out
				</button>
			</header>
			<ReachBanner reach={reach} />
			<SandboxBanner />
			{listOnly ? (
				<main class={reach === "offline" ? "list-only stale" : "list-only"}>{list}</main>
			) : (
				<div class={`${wide && mayList ? "layout split" : "layout"}${reach === "offline" ? " stale" : ""}`}>
					{wide && list}
					<main>
						{route.screen === "approvals" && <Inbox me={me} pending={pending} names={names} />}
						{route.screen === "sessions" && <Welcome me={me} />}
						{route.screen === "new" && can(me, "sessions:write") && (
							<CreateSession
								sessions={sessions.sessions ?? []}
								onCreated={(s) => {
									sessions.reload();
									location.hash = sessionHref(s.id);
								}}
							/>
						)}
						{route.screen === "session" && (
							<SessionView
								key={route.id}
								id={route.id}
								me={me}
								pending={pending}
								wide={wide}
								onChange={sessions.reload}
							/>
						)}
					</main>
				</div>
			)}
		</>
	);
}

/** The desktop's empty main area, or all an approvals-only key has besides its inbox. */
function Welcome({ me }: { me: Whoami }) {
	if (!can(me, "sessions:read"))
		return (
			<p>
				This credential answers approvals only: see <a href="#/approvals">Approvals</a>.
			</p>
		);
	return (
		<section class="welcome" aria-labelledby="welcome-title">
			<h1 id="welcome-title">Pick a session</h1>
			<p class="muted">
				Choose one on the left to read its conversation, answer what it asks and review what it changed
				{can(me, "sessions:write") ? ", or start a new one." : "."}
			</p>
			{can(me, "sessions:write") && (
				<a class="button primary" href="#/new">
					New session
				</a>
			)}
		</section>
	);
}
