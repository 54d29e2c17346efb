cuda_tile.module @matmul_module {
  entry @static_persistent_matmul_kernel_entry(%0: tile<ptr<f16>>, %1: tile<i32>, %2: tile<i32>, %3: tile<i32>, %4: tile<i32>, %5: tile<ptr<f16>>, %6: tile<i32>, %7: tile<i32>, %8: tile<i32>, %9: tile<i32>, %10: tile<ptr<f16>>, %11: tile<i32>, %12: tile<i32>, %13: tile<i32>, %14: tile<i32>, %15: tile<i32>, %16: tile<i32>, %17: tile<i32>) optimization_hints = #cuda_tile.optimization_hints<sm_90 = {num_cta_in_cga = 4, occupancy = 1}> {
    %18 = constant <i32: 128> : tile<i32>
    %19 = constant <i32: 512> : tile<i32>
    %20 = constant <i32: 64> : tile<i32>
    %21 = constant <i32: 8> : tile<i32>
    %22 = constant <i32: 0> : tile<i32>
    %23 = assume bounded<0, ?>, %1 : tile<i32>
    %24 = assume div_by<16>, %23 : tile<i32>
    %25 = assume bounded<0, ?>, %2 : tile<i32>
    %26 = assume div_by<16>, %25 : tile<i32>
    %27 = assume bounded<0, ?>, %3 : tile<i32>
    %28 = assume div_by<16>, %27 : tile<i32>
    %29 = make_token : token
    %30 = assume div_by<16>, %0 : tile<ptr<f16>>
    %31 = make_tensor_view %30, shape = [%24, %26], strides = [%28, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %32 = assume bounded<0, ?>, %6 : tile<i32>
    %33 = assume div_by<16>, %32 : tile<i32>
    %34 = assume bounded<0, ?>, %7 : tile<i32>
    %35 = assume div_by<16>, %34 : tile<i32>
    %36 = assume bounded<0, ?>, %8 : tile<i32>
    %37 = assume div_by<16>, %36 : tile<i32>
    %38 = make_token : token
    %39 = assume div_by<16>, %5 : tile<ptr<f16>>
    %40 = make_tensor_view %39, shape = [%33, %35], strides = [%37, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %41 = assume bounded<0, ?>, %11 : tile<i32>
    %42 = assume div_by<16>, %41 : tile<i32>
    %43 = assume bounded<0, ?>, %12 : tile<i32>
    %44 = assume div_by<16>, %43 : tile<i32>
    %45 = assume bounded<0, ?>, %13 : tile<i32>
    %46 = assume div_by<16>, %45 : tile<i32>
    %47 = make_token : token
    %48 = assume div_by<16>, %10 : tile<ptr<f16>>
    %49 = make_tensor_view %48, shape = [%42, %44], strides = [%46, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %50 = assume div_by<16>, %15 : tile<i32>
    %51 = assume div_by<16>, %16 : tile<i32>
    %52 = assume div_by<16>, %17 : tile<i32>
    %53 = constant <i32: 128> : tile<i32>
    %54 = constant <i32: 512> : tile<i32>
    %55 = constant <i32: 64> : tile<i32>
    %56 = constant <i32: 8> : tile<i32>
    %57 = constant <i32: 0> : tile<i32>
    %58 = addi %50, %53 : tile<i32>
    %59 = constant <i32: 1> : tile<i32>
    %60 = subi %58, %59 : tile<i32>
    %61 = divi %60, %53 signed rounding negative_inf : tile<i32>
    %62 = addi %51, %54 : tile<i32>
    %63 = constant <i32: 1> : tile<i32>
    %64 = subi %62, %63 : tile<i32>
    %65 = divi %64, %54 signed rounding negative_inf : tile<i32>
    %66 = addi %52, %55 : tile<i32>
    %67 = constant <i32: 1> : tile<i32>
    %68 = subi %66, %67 : tile<i32>
    %69 = divi %68, %55 signed rounding negative_inf : tile<i32>
    %70 = muli %61, %65 : tile<i32>
    %71, %72, %73 = get_tile_block_id : tile<i32>
    %74 = assume bounded<0, ?>, %71 : tile<i32>
    %75 = assume bounded<0, ?>, %72 : tile<i32>
    %76 = assume bounded<0, ?>, %73 : tile<i32>
    %77, %78, %79 = get_num_tile_blocks : tile<i32>
    %80 = assume bounded<0, ?>, %77 : tile<i32>
    %81 = assume bounded<0, ?>, %78 : tile<i32>
    %82 = assume bounded<0, ?>, %79 : tile<i32>
    %83 = muli %56, %65 : tile<i32>
    %84 = constant <i32: 128> : tile<i32>
    %85 = constant <i32: 64> : tile<i32>
    %86 = constant <i32: -1> : tile<i32>
    %87 = constant <i32: -1> : tile<i32>
    %88 = constant <i32: -1> : tile<i32>
    %89 = constant <i32: -1> : tile<i32>
    %90 = make_partition_view %31 : partition_view<tile=(128x64), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
    %91 = constant <i32: 64> : tile<i32>
    %92 = constant <i32: 512> : tile<i32>
    %93 = constant <i32: -1> : tile<i32>
    %94 = constant <i32: -1> : tile<i32>
    %95 = constant <i32: -1> : tile<i32>
    %96 = constant <i32: -1> : tile<i32>
    %97 = make_partition_view %40 : partition_view<tile=(64x512), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
    %98 = constant <i32: 128> : tile<i32>
    %99 = constant <i32: 512> : tile<i32>
    %100 = constant <i32: -1> : tile<i32>
    %101 = constant <i32: -1> : tile<i32>
    %102 = make_partition_view %49 : partition_view<tile=(128x512), tensor_view<?x?xf16, strides=[?,1]>>
    for %103 in (%74 to %70, step %80) : tile<i32> {
      %104 = divi %103, %83 signed rounding negative_inf : tile<i32>
      %105 = muli %104, %56 : tile<i32>
      %106 = subi %61, %105 : tile<i32>
      %107 = cmpi less_than %106, %56, signed : tile<i32> -> tile<i1>
      %108 = if %107 -> (tile<i32>) {
        yield %106 : tile<i32>
      } else {
        yield %56 : tile<i32>
      }
      %109 = remi %103, %108 signed : tile<i32>
      %110 = addi %105, %109 : tile<i32>
      %111 = remi %103, %83 signed : tile<i32>
      %112 = divi %111, %108 signed rounding negative_inf : tile<i32>
      %113 = constant <f32: 0.0> : tile<128x512xf32>
      %114 = constant <i32: 0> : tile<i32>
      %115 = constant <i32: 1> : tile<i32>
      %127 = for %116 in (%114 to %69, step %115) : tile<i32> iter_values(%117 = %113) -> (tile<128x512xf32>) {
        %118 = assume bounded<0, ?>, %116 : tile<i32>
        %119, %120 = load_view_tko weak %90[%110, %118] token = %29 : partition_view<tile=(128x64), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<128x64xf16>, token
        %121, %122 = load_view_tko weak %97[%118, %112] token = %38 : partition_view<tile=(64x512), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<64x512xf16>, token
        %123 = constant <i32: 1> : tile<i32>
        %125 = constant <i1: 0> : tile<i1>
        %126 = mmaf %119, %121, %117 : tile<128x64xf16>, tile<64x512xf16>, tile<128x512xf32>
        continue %126 : tile<128x512xf32>
      }
      %128 = ftof %127 : tile<128x512xf32> -> tile<128x512xf16>
      %129 = store_view_tko weak %128, %102[%110, %112] token = %47 : tile<128x512xf16>, partition_view<tile=(128x512), tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> token
      continue
    }
    return
  }
}
