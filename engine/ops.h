// Everything a model needs to emit graphs: include this one header.
#pragma once
#include "engine/graph.h"
#include "engine/ops/attention.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/linear_act.h"
#include "engine/ops/linear_cross_entropy.h"
#include "engine/ops/matmul.h"
#include "engine/ops/nn.h"
#include "engine/ops/reduce.h"
#include "engine/ops/shape.h"
