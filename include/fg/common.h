/* common.h - tiny definitions shared by every part of fanogate. */
#ifndef FG_COMMON_H
#define FG_COMMON_H

#define FG_MUST_CHECK __attribute__((warn_unused_result))
#define FG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define FG_CACHE_LINE 64

#endif
