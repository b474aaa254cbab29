// Markdown bundled as text (scripts/build-dashboard.mjs: esbuild's text loader for .md).
declare module '*.md' {
  const text: string;
  export default text;
}

// Stylesheets the bundler (esbuild) inlines into the page's CSS; imported for that side effect only.
declare module '*.css';
