#!/usr/bin/env node
// The installed command: runs the bundled command line (npm run build makes dist/). dist/tabula.mjs
// runs it by itself only when node runs that file, so that the API can import it without running it.
import { runCommandLine } from "../dist/tabula.mjs";

void runCommandLine();
