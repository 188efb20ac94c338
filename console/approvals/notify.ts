/**
 * A dialog that opens while the tab is hidden: a browser notification (when the person allowed
 * them) and a count in the tab's title, cleared when the tab is seen again.
 */
const baseTitle = "pi-gateway console";
let unseen = 0;

document.addEventListener("visibilitychange", () => {
	if (document.visibilityState === "visible") {
		unseen = 0;
		document.title = baseTitle;
	}
});

/** `title`: the agent's text (an approval's title), or what a tool call is. */
export function announce(title: string, tag: string): void {
	if (document.visibilityState === "visible") return;
	unseen++;
	document.title = `(${unseen}) ${baseTitle}`;
	if ("Notification" in globalThis && Notification.permission === "granted") {
		// The title is the agent's text: a notification shows it as plain text.
		new Notification("Approval needed", { body: title.slice(0, 200), tag });
	}
}

export const canAskNotifications = () => "Notification" in globalThis && Notification.permission === "default";
export const askNotifications = () => Notification.requestPermission();
