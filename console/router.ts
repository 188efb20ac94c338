import { useEffect, useState } from "preact/hooks";

/** Hash routes (#/, #/new, #/approvals, #/sessions/ID): the page is one static file under /console/. */
export type Route =
	| { screen: "sessions" }
	| { screen: "new" }
	| { screen: "approvals" }
	| { screen: "session"; id: string };

export function parseRoute(hash: string): Route {
	const session = /^#\/sessions\/([^/?#]+)/.exec(hash);
	if (session?.[1]) return { screen: "session", id: decodeURIComponent(session[1]) };
	if (hash.startsWith("#/approvals")) return { screen: "approvals" };
	if (hash.startsWith("#/new")) return { screen: "new" };
	return { screen: "sessions" };
}

export const sessionHref = (id: string) => `#/sessions/${encodeURIComponent(id)}`;

export function useRoute(): Route {
	const [route, setRoute] = useState(() => parseRoute(location.hash));
	useEffect(() => {
		const onHash = () => setRoute(parseRoute(location.hash));
		addEventListener("hashchange", onHash);
		return () => removeEventListener("hashchange", onHash);
	}, []);
	return route;
}

/** Whether the window is wide enough for the sessions beside the open one (else one screen at a time). */
const wideQuery = "(min-width: 900px)";
export function useWide(): boolean {
	const [wide, setWide] = useState(() => matchMedia(wideQuery).matches);
	useEffect(() => {
		const query = matchMedia(wideQuery);
		const onChange = () => setWide(query.matches);
		query.addEventListener("change", onChange);
		return () => query.removeEventListener("change", onChange);
	}, []);
	return wide;
}
