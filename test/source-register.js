/** Registers test/source-hooks.js (`node --import ./test/source-register.js`): see there. */
import { register } from 'node:module';

register('./source-hooks.js', import.meta.url);
