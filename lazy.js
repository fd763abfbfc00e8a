'use strict'
// `member-work-sync/lazy`: the package entry without loading the native
// binary at import. `require('member-work-sync')` throws
// `MWS_NO_NATIVE_BINARY` at import when no binary loads for the platform (no
// platform package installed, one left out of an installer, a `.node` file
// kept inside app.asar); an app that imports this entry instead loads the
// addon when it needs it, and gets that error as a rejected promise, so a
// missing binary turns off one feature instead of failing the app's import.

/**
 * Loads the addon (`index.js`: the same module `require('member-work-sync')`
 * returns). Resolves to it, or rejects with the loader's error (`code:
 * 'MWS_NO_NATIVE_BINARY'`, the message naming the platform and both places
 * it looked). Never throws. A failed load is not remembered: a later call
 * tries again, a successful one returns the cached module.
 */
function loadMemberWorkSync() {
  try {
    return Promise.resolve(require('./index.js'))
  } catch (error) {
    return Promise.reject(error)
  }
}

module.exports.loadMemberWorkSync = loadMemberWorkSync
