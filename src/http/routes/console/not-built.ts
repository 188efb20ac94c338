/**
 * What GET /console/ answers when dist/console holds no build: a page that says so and how to
 * build it, instead of a JSON 404 a person cannot act on. `npm start` builds the console before
 * the gateway starts when vite is installed (scripts/console-ready.ts), so this is what an install
 * without the dev dependencies (`npm ci --omit=dev` on a clone, setup.sh not run) shows: the way
 * to build it then is scripts/build-console.sh, which fetches the build tools outside node_modules. No inline style or script:
 * the console's CSP holds here too.
 */
export const notBuiltPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>pi-gateway console: not built</title></head>
<body>
<main>
<h1>The console is not built</h1>
<p>This gateway runs from a source checkout whose <code>dist/console</code> is empty. Build it once, then reload this page:</p>
<pre><code>bash scripts/build-console.sh</code></pre>
<p>(README's first command, <code>bash scripts/setup.sh</code>, runs it. With the dev dependencies installed, <code>npm run build:console</code> does the same.)</p>
<p><code>npm start</code> builds it by itself when vite is installed. The API, its reference at <a href="../docs">/docs</a> and everything else work without it.</p>
</main>
</body>
</html>
`;
