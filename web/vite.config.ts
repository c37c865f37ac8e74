// Builds the app into the Python package, where `ukr serve` serves it at `/` (service/web.py).
import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

export default defineConfig({
  plugins: [preact()],
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
