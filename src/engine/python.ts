// Finding a Python interpreter that imports torch (for the PyTorch golden tests, `ragen bench engine`,
// and later the torch engine). Debian installs torch for /usr/bin/python3, which a pyenv shim may hide.
import { spawnSync } from 'node:child_process';

/** Interpreters tried in order: $RAGEN_PYTHON, python3 on PATH, Debian's /usr/bin/python3. */
export function pythonCandidates(): string[] {
  const list = [process.env.RAGEN_PYTHON, 'python3', '/usr/bin/python3'].filter((p): p is string => Boolean(p));
  return [...new Set(list)];
}

/** The first interpreter that imports torch, with torch's version; or null. */
export function findTorchPython(): { python: string; torchVersion: string } | null {
  for (const python of pythonCandidates()) {
    const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (r.status === 0) return { python, torchVersion: r.stdout.trim() };
  }
  return null;
}

/** The message to show when no interpreter has torch. */
export const TORCH_MISSING = `PyTorch is not importable from any of: ${pythonCandidates().join(', ')}. Install it with \`apt-get install python3-torch\` (Debian/Ubuntu) or \`pip install torch\`, or point RAGEN_PYTHON at an interpreter that has it.`;
