// Markdown bundled as text (scripts/build-dashboard.mjs: esbuild's text loader for .md).
declare module '*.md' {
  const text: string;
  export default text;
}
