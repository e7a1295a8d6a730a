/** Entry point of the disk-gc-tick function. */
import { runFunction } from '../../shared/runtime/index.js';
import { buildGcApp } from './app.js';

void runFunction('disk-gc-tick', buildGcApp);
