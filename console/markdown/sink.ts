import DOMPurify from "dompurify";
import { marked } from "marked";

/**
 * The one place model output becomes HTML: marked renders, DOMPurify sanitizes (no style, no
 * forms, links open with rel=noopener noreferrer in a new tab). If rendering throws, the text is
 * shown escaped. Every other string reaches the DOM as text.
 */
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
	if (node.tagName === "A") {
		node.setAttribute("target", "_blank");
		node.setAttribute("rel", "noopener noreferrer");
	}
});

const config = {
	FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "video", "audio", "iframe"],
	FORBID_ATTR: ["style", "class", "id"],
	ALLOW_DATA_ATTR: false,
};

export function renderMarkdown(target: HTMLElement, text: string): void {
	try {
		const html = marked.parse(text, { async: false, gfm: true, breaks: true });
		target.innerHTML = DOMPurify.sanitize(html, config);
	} catch {
		target.textContent = text;
	}
}
