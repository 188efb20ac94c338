import { useEffect, useState } from "preact/hooks";

/** Hash routes (#/, #/approvals, #/sessions/ID): the page is one static file under /console/. */
export type Route = { screen: "sessions" } | { screen: "approvals" } | { screen: "session"; id: string };

export function parseRoute(hash: string): Route {
	const session = /^#\/sessions\/([^/?#]+)/.exec(hash);
	if (session?.[1]) return { screen: "session", id: decodeURIComponent(session[1]) };
	if (hash.startsWith("#/approvals")) return { screen: "approvals" };
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
