// Builds the app into the Python package, where `ukr serve` serves it at `/` (service/web.py),
// then the standalone graph viewer (viewer.html) beside it: a build of its own, so the viewer is
// one script and one stylesheet that share nothing with the app (`ukr graph export --format
// html` inlines them into one file; static/viewer.json names them).
import { build, defineConfig, type Plugin } from "vite";
import preact from "@preact/preset-vite";

/** The viewer's build, run once the app's is written, into the same folder. */
function viewerBuild(): Plugin {
  let root = "";
  let outDir = "";
  let skip = false;
  return {
    name: "ukr-viewer-build",
    apply: "build",
    configResolved(config) {
      root = config.root;
      outDir = config.build.outDir; // relative to root, or absolute
      skip = Boolean(config.build.ssr) || config.mode === "viewer";
    },
    async closeBundle() {
      if (skip) return;
      await build({
        configFile: false,
        root,
        mode: "viewer",
        base: "./",
        logLevel: "warn",
        plugins: [preact(), viewerManifest()],
        build: {
          outDir,
          emptyOutDir: false,
          assetsDir: "assets",
          sourcemap: false,
          target: "es2022",
          modulePreload: false,
          rollupOptions: {
            input: `${root}/viewer.html`,
            output: {
              entryFileNames: "assets/viewer-[hash].js",
              assetFileNames: "assets/viewer-[hash][extname]",
            },
          },
        },
      });
    },
  };
}

/** static/viewer.json: the page and the files it needs, for the HTML export. */
function viewerManifest(): Plugin {
  return {
    name: "ukr-viewer-manifest",
    generateBundle(_options, bundle) {
      const files = Object.keys(bundle).sort();
      const manifest = {
        html: "viewer.html",
        js: files.filter((f) => f.endsWith(".js")),
        css: files.filter((f) => f.endsWith(".css")),
        graph_element: "ukr-graph",
      };
      this.emitFile({ type: "asset", fileName: "viewer.json", source: JSON.stringify(manifest, null, 2) + "\n" });
    },
  };
}

export default defineConfig({
  plugins: [preact(), viewerBuild()],
  base: "/",
  // `npx vite`: the app with hot reload, its API calls passed to a local `ukr serve`
  server: { proxy: { "/v1": "http://127.0.0.1:8420" } },
  build: {
    outDir: "../src/unified_kg_rag/service/static",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    target: "es2022",
  },
});
