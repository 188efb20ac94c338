import { useEffect, useState } from "preact/hooks";

/**
 * Whether the gateway answers, as every call of the page finds out (client.ts reports each one): a
 * call that gets no HTTP answer at all, or a proxy's 502/504 in its place, makes the page offline at
 * once; the next answer makes it "back" for a few seconds, then plain online. The polls (sessions,
 * inbox) keep asking every few seconds, so both changes show within seconds.
 */
export type Reach = "online" | "offline" | "back";

let reach: Reach = "online";
let backTimer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<(r: Reach) => void>();
const set = (r: Reach) => {
	if (r === reach) return;
	reach = r;
	for (const listener of listeners) listener(r);
};

/** How long "Connected again" stays on screen. */
const backMs = 4000;

export function reportReach(answered: boolean): void {
	if (!answered) {
		clearTimeout(backTimer);
		backTimer = undefined;
		set("offline");
		return;
	}
	if (reach !== "offline") return;
	set("back");
	backTimer = setTimeout(() => set("online"), backMs);
}

export function useReach(): Reach {
	const [now, setNow] = useState(reach);
	useEffect(() => {
		listeners.add(setNow);
		setNow(reach);
		return () => {
			listeners.delete(setNow);
		};
	}, []);
	return now;
}
