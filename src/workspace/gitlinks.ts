import { type GitRepo, git } from "./git.ts";

/**
 * A folder of the agent's with a `.git` of its own is added as a gitlink, and every later `git
 * add` runs `git status` inside it, under that repository's config: the agent's filters ran
 * (confined, but in the shadow git dir). Gitlinks leave the index as soon as they appear (git
 * says so on stderr), and once per process for an index kept from before: the nested
 * repository's files are not in "what changed" (docs/workspace.md).
 */
export async function dropGitlinks(repo: GitRepo, timeoutMs: number): Promise<void> {
	const options = { timeoutMs };
	const { out } = await git(repo, ["ls-files", "--stage", "-z"], options);
	const links: string[] = [];
	for (const entry of out.toString("utf8").split("\0"))
		if (entry.startsWith("160000 ")) links.push(entry.slice(entry.indexOf("\t") + 1));
	for (let at = 0; at < links.length; at += 500)
		await git(repo, ["update-index", "--force-remove", "--", ...links.slice(at, at + 500)], options);
}
