/** Entry point of the disk-gc-tick function (its bundle and its startup snapshot). */
import { runFunction, startFunction } from '../../shared/runtime/index.js';
import { buildGcApp } from './app.js';

startFunction(() => runFunction('disk-gc-tick', buildGcApp));
