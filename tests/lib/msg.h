/*
 * msg.h: an error's message as a user reads it, for test assertions
 * (mf_error_message into a buffer that lives until the end of the
 * enclosing block).
 */
#ifndef MF_TEST_MSG_H
#define MF_TEST_MSG_H

#include "base/err.h"

#define MSG(e) mf_error_message((e), (char[MF_ERROR_MAX]){ 0 }, MF_ERROR_MAX)

#endif
