// Every Expr kind's class, for code that handles all of them (dispatch,
// cloning, naming).
#pragma once

#include "ir/creation_exprs.h"
#include "ir/exprs.h"
#include "ir/indexing_exprs.h"
#include "ir/matmul_exprs.h"
#include "ir/shape_exprs.h"
#include "ir/sort_exprs.h"
