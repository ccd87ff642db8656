// transformers.js checks that sharp is a function at import time; calling it means an image was read.
module.exports = function sharp() {
  throw new Error('rumedbench does not read images (sharp is a stub)');
};
