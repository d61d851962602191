#!/usr/bin/env node
// The installed command: runs the bundled CLI (npm run build makes dist/).
import "../dist/tabula.mjs";
